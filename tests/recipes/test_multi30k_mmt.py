"""recipes/multi30k_mmt.sh end to end on a tiny stand-in for Multi30k (gzipped raw text and image lists in the
repository's layout, a few pictures as flickr30k-images.tar.gz, VGG16 weights named by their SHA-256), served by a
mock downloader; its --dry-run, its check of the weights and the required images."""
import gzip
import json
import tarfile
from pathlib import Path

import pytest

from tests.data.test_captions import write_images
from tests.recipes.mirror import downloader, run_recipe, vgg16_weights

RECIPE = Path(__file__).parents[2] / "recipes" / "multi30k_mmt.sh"
BASE = "https://example.org/multi30k/data/task1"
GERMAN = {"red": "rotes", "green": "grünes", "blue": "blaues", "square": "Quadrat", "disc": "Scheibe"}
COLOURS = ["red", "green", "blue"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """Multi30k's files, the images and the weights, and a downloader serving them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    pictures = root / "pics" / "flickr30k-images"
    pictures.mkdir(parents=True)
    names = write_images(pictures, n=6)
    for extra in ("captions.token", "train.txt", "valid.txt", "test.txt"):
        (pictures / extra).unlink()
    with tarfile.open(root / "flickr30k-images.tar.gz", "w:gz") as tar:
        tar.add(pictures, arcname="flickr30k-images")
    for split, official, n in (("train", "train", 24), ("val", "val", 4), ("test", "test_2016_flickr", 4)):
        lines = [names[(i + (3 if split != "train" else 0)) % 6] for i in range(n)]
        captions = [(COLOURS[int(x[3]) % 3], ("square", "disc")[int(x[3]) % 2]) for x in lines]
        (root / f"{official}.txt").write_text("".join(x + "\n" for x in lines))
        for lang, text in (("en", [f"a {c} {s} ." for c, s in captions]),
                           ("de", [f"ein {GERMAN[c]} {GERMAN[s]} ." for c, s in captions])):
            (root / f"{official}.{lang}.gz").write_bytes(gzip.compress("".join(t + "\n" for t in text).encode()))
    downloader(root, root)
    return root, f"https://example.org/models/{vgg16_weights(root)}"


def recipe(mirror, work, *args, **env):
    root, weights = mirror
    return run_recipe(RECIPE, work, *args, **{
        "DOWNLOADER": str(root / "get.sh"), "MULTI30K": BASE, "VGG16_WEIGHTS": weights,
        "FLICKR30K_IMAGES": "https://example.org/flickr30k-images.tar.gz", "CONFIGS": "text hier", "IMAGE_SIZE": "32",
        "SIZES": "--emb-size 8 --enc-size 8 --dec-size 8 --att-size 8", "STEPS": "3", "BATCH": "8", "BEAM": "2",
        "VOCAB": "40", "DEVICE": "cpu", **env})


def test_the_recipe_trains_the_text_baseline_and_a_row_and_prints_table_1(mirror, tmp_path):
    work = tmp_path / "w"
    r = recipe(mirror, work)
    assert r.returncode == 0, r.stderr[-3000:]
    fetched = (mirror[0] / "fetched").read_text().split()
    assert fetched[:3] == [f"{BASE}/raw/train.en.gz", f"{BASE}/raw/train.de.gz", f"{BASE}/image_splits/train.txt"]
    assert f"{BASE}/raw/test_2016_flickr.de.gz" in fetched and fetched[-1] == mirror[1] and len(fetched) == 11
    assert (work / "text" / "test.img").read_text() == (mirror[0] / "test_2016_flickr.txt").read_text()
    table = r.stdout.split("== Table 1, MMT columns")[1].splitlines()
    assert table[3].split() == ["text", "only", "cgru", "-", "-", "33.0", "-", table[3].split()[-1]]
    assert table[4].split()[:6] == ["hier", "cgru", "no", "no", "32.1", "49.1"] and len(table[4].split()) == 7
    for name in ("text", "hier"):
        assert len((work / "out" / f"{name}.test.de").read_text().split("\n")) == 5
        config = (work / "models" / name / "config.yaml").read_text()
        assert "decoder_cell: cgru" in config and "lr: 0.0001" in config
    assert "encoders: src\n" in (work / "models" / "text" / "config.yaml").read_text()
    options = json.loads((work / "data" / "manifest.json").read_text())["options"]
    assert options["vocab"] == "spm-bpe:40" and options["images"]["size"] == 32
    again = recipe(mirror, work)  # everything done: nothing fetched, trained or translated again
    assert again.returncode == 0 and again.stdout == r.stdout and len((mirror[0] / "fetched").read_text().split()) == 11
    assert "parameters" not in again.stderr and "translated" not in again.stderr


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2", CONFIGS="text concat hier-share")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "--src-images img" in out and "--vocab spm-bpe:40 --joint" in out and "--image-size 32" in out
    trains = [line for line in out.splitlines() if line.startswith("torchrun --nproc-per-node 2 -m nmtkit train")]
    assert len(trains) == 3
    assert "--encoders src" in trains[0] and "--decoder-cell cgru" in trains[0]
    assert "--combination concat --decoder-cell gru" in trains[1] and "--encoders" not in trains[1]
    assert "--combination hierarchical --decoder-cell cgru --share-projections --no-sentinel" in trains[2]
    translations = [line for line in out.splitlines() if line.startswith("nmtkit translate")]
    assert [t.count(" -i ") for t in translations] == [1, 2, 2] and translations[1].split()[-3].endswith("test.img")
    assert "get.sh" in r.stdout and "flickr30k-images.tar.gz" in r.stdout
    assert not (tmp_path / "w").exists()


def test_weights_that_do_not_match_their_name_stop_the_recipe(mirror, tmp_path):
    root, weights = mirror
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(downloader(tmp_path, root, junk=".pth")))
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 1. data failed") and "SHA-256" in last and weights in last
    assert not list((tmp_path / "w" / "downloads").glob("vgg16*"))


def test_the_images_must_be_given(tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", FLICKR30K_IMAGES="")
    assert r.returncode == 2 and "FLICKR30K_IMAGES" in r.stderr and not (tmp_path / "w").exists()
