"""recipes/flickr30k.sh end to end on a tiny stand-in for Flickr30k, its downloads served by a mock downloader
from local files (the images as a .tar.gz, Karpathy's split file in a .zip, VGG16 weights named by their SHA-256),
its resumption, its --dry-run and --gpus, and its check of the weights."""
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from nmtkit.data.karpathy import karpathy_split
from nmtkit.errors import NmtkitError
from tests.data.test_captions import write_images
from tests.recipes.mirror import downloader, run_recipe, vgg16_weights

RECIPE = Path(__file__).parents[2] / "recipes" / "flickr30k.sh"


def karpathy_json(names, path):
    """A Karpathy split file for ``names``: two tokenised captions each, splits train/restval/val/test."""
    splits = ["train", "restval", "train", "train", "train", "val", "val", "test", "test"]
    images = [{"filename": n, "split": s, "sentences": [{"raw": f"A {n} .", "tokens": ["a", n.split(".")[0]]},
                                                        {"raw": "Some picture", "tokens": ["some", "picture"]}]}
              for n, s in zip(names, splits)]
    path.write_text(json.dumps({"images": images, "dataset": "flickr30k"}))


def test_karpathy_split_files(tmp_path):
    karpathy_json([f"img{i}.png" for i in range(9)], tmp_path / "d.json")
    assert karpathy_split(tmp_path / "d.json", tmp_path / "out") == {"train": 5, "dev": 2, "test": 2}
    assert (tmp_path / "out" / "dev.txt").read_text() == "img5.png\nimg6.png\n"
    assert (tmp_path / "out" / "captions.tsv").read_text().startswith("img0.png\ta img0\nimg0.png\tsome picture\n")


@pytest.mark.parametrize("text,message", [
    ('{"images": [{"filename": "x.jpg"}]}', r"images\[0\]: 'split' should be one of train, .*, not None"),
    ('{"images": [{"filename": "x.jpg", "split": "weird", "sentences": []}]}', "not 'weird'"),
    ('{"images": [{"filename": "x.jpg", "split": "val", "sentences": [{"raw": 5}]}]}',
     r"images\[0\].sentences\[0\]: expected 'tokens' \(a list of words\) or 'raw'"),
    ('{"images": [{"filename": "x.jpg", "split": "val", "sentences": "abc"}]}', "'sentences' should be a list"),
    ('{"images": [null]}', r"images\[0\]: expected an object"),
    ('{"images": "x"}', "a JSON object whose 'images' is a list"),
    ("[1]", "a JSON object whose 'images' is a list"),
    ("{", "invalid JSON"),
])
def test_a_damaged_karpathy_split_file_is_one_line_naming_the_entry(tmp_path, text, message):
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(NmtkitError, match=message):
        karpathy_split(tmp_path / "bad.json", tmp_path / "out")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """What the recipe downloads, as local files, and a downloader that serves them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    pictures = root / "flickr30k-images"
    pictures.mkdir()
    names = write_images(pictures)
    with tarfile.open(root / "flickr30k-images.tar.gz", "w:gz") as tar:
        tar.add(pictures, arcname="flickr30k-images")
    karpathy_json(names, root / "dataset_flickr30k.json")
    with zipfile.ZipFile(root / "caption_datasets.zip", "w") as z:
        z.write(root / "dataset_flickr30k.json", "dataset_flickr30k.json")
    downloader(root, root)
    return root, f"https://download.pytorch.org/models/{vgg16_weights(root)}"


def recipe(mirror, work, *args, **env):
    root, weights = mirror
    return run_recipe(RECIPE, work, *args, **{
        "DOWNLOADER": str(root / "get.sh"), "IMAGE_SIZE": "32", "STEPS_BASE": "8", "STEPS_TATT": "4", "BATCH": "4",
        "SIZES": "--emb-size 8 --dec-size 8", "DEVICE": "cpu", "VGG16_WEIGHTS": weights,
        "FLICKR30K_IMAGES": "https://example.org/flickr30k-images.tar.gz", **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_downloads_trains_both_models_and_prints_table_3(mirror, built):
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    fetched = (mirror[0] / "fetched").read_text().split()
    assert fetched == ["https://example.org/flickr30k-images.tar.gz",
                       "https://cs.stanford.edu/people/karpathy/deepimagesent/caption_datasets.zip", mirror[1]]
    table = r.stdout.split("== Table 3")[1].splitlines()
    assert table[2].split()[-4:] == ["28.3", "19.0", "37.6", "28.56"]
    assert table[4].startswith("nmtkit: source-attn") and len(table[5].split()) == 6
    assert len((work / "tatt.test.en").read_text().split("\n")) == 3  # two test images
    config = (work / "tatt" / "config.yaml").read_text()
    assert "target_attention: true" in config and "optimizer: sgd" in config and "lr: 0.05" in config
    assert (work / "base" / "done").exists() and (work / "tatt" / "done").exists()


def test_a_second_run_skips_what_is_done_and_a_stopped_training_resumes(mirror, built):
    work, first = built
    fetched = (mirror[0] / "fetched").read_text()
    again = recipe(mirror, work, FLICKR30K_IMAGES="/no/such/images.tar.gz")  # the corpus is made: not needed
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout == first.stdout and (mirror[0] / "fetched").read_text() == fetched
    assert "parameters" not in again.stderr
    (work / "tatt" / "done").unlink()  # as if the second training had been stopped: it goes on with --resume
    dry = recipe(mirror, work, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    trains = [line for line in dry.stdout.splitlines() if " train " in f" {line} "]
    assert len(trains) == 1 and "/tatt " in trains[0] and trains[0].rstrip().endswith("--resume")
    assert "--target-attention" in trains[0] and "--init-from" not in trains[0]  # the run holds its warm start
    assert "preprocess" not in dry.stdout and "caption" not in dry.stdout


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2")
    assert r.returncode == 0, r.stderr
    assert "nmtkit preprocess --captions" in r.stdout and "--init-from" in r.stdout and "--beam 10" in r.stdout
    trains = [line for line in r.stdout.splitlines() if " train " in f" {line} "]
    assert len(trains) == 2 and all(t.startswith("torchrun --nproc-per-node 2 -m nmtkit train") for t in trains)
    assert "--optimizer adadelta" in trains[0] and "--init-from" in trains[1] and "--resume" not in trains[1]
    assert "get.sh" in r.stdout and not (tmp_path / "w").exists()  # (the download: on stderr when its path was read)


def test_weights_that_do_not_match_their_name_stop_the_recipe(mirror, tmp_path):
    root, weights = mirror
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(downloader(tmp_path, root, junk=".pth")))
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 1. data failed") and "SHA-256" in last and weights in last
    assert not list((tmp_path / "w" / "downloads").glob("vgg16*")) and not (tmp_path / "w" / "data").exists()


def test_the_images_must_be_given(tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", FLICKR30K_IMAGES="")
    assert r.returncode == 2 and "FLICKR30K_IMAGES" in r.stderr
