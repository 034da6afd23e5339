"""recipes/wmt16_ape.sh end to end on a tiny made-up stand-in for the WMT16 APE data (LINDAT's three archives,
TrainDev.zip, Test.zip and test_pe.zip, served by a mock downloader), its resumption, its --dry-run and its
checks of the downloads."""
import random
import zipfile
from pathlib import Path

import pytest

from tests.recipes.mirror import downloader, run_recipe

RECIPE = Path(__file__).parents[2] / "recipes" / "wmt16_ape.sh"
URLS = ["https://example.org/ape/TrainDev.zip", "https://example.org/ape/Test.zip",
        "https://example.org/ape/test_pe.zip"]
EN = "click the button to open save close the file menu window in dialog".split()
DE = "klicken Sie auf die Schaltfläche um das Menü Fenster zu öffnen speichern schließen Datei im Dialog".split()


def triplets(rng, n):
    """n (source, MT, post-edit) lines: the MT is the post-edit with a word replaced or dropped."""
    rows = []
    for _ in range(n):
        pe = rng.choices(DE, k=rng.randint(3, 8))
        mt = list(pe)
        k = rng.randrange(len(mt))
        if rng.random() < 0.5:
            mt[k] = rng.choice(DE)
        else:
            del mt[k]
        rows.append((" ".join(rng.choices(EN, k=len(pe))), " ".join(mt), " ".join(pe) + " ."))
    return rows


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The three archives (in the layout train/train.src, ..., test/test.mt, and test.pe), a downloader that serves
    them by the URL's file name and logs what it fetched."""
    root = tmp_path_factory.mktemp("mirror")
    rng = random.Random(3)
    splits = {"train": triplets(rng, 40), "dev": triplets(rng, 6), "test": triplets(rng, 8)}

    def lines(split, k):
        return "".join(row[k] + "\n" for row in splits[split])

    with zipfile.ZipFile(root / "TrainDev.zip", "w") as z:
        for split in ("train", "dev"):
            for k, ext in enumerate(("src", "mt", "pe")):
                z.writestr(f"{split}/{split}.{ext}", lines(split, k))
    with zipfile.ZipFile(root / "Test.zip", "w") as z:
        z.writestr("test/test.src", lines("test", 0))
        z.writestr("test/test.mt", lines("test", 1))
    with zipfile.ZipFile(root / "test_pe.zip", "w") as z:
        z.writestr("test.pe", lines("test", 2))
    downloader(root, root)
    return root


def recipe(mirror, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{
        "DOWNLOADER": str(mirror / "get.sh"), "WMT16_APE": " ".join(URLS), "CONFIGS": "concat hier",
        "SIZES": "--emb-size 8 --enc-size 8 --dec-size 8 --att-size 8", "STEPS": "3", "BATCH": "8", "BEAM": "2",
        "VOCAB": "100", "DEVICE": "cpu", **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_downloads_trains_two_rows_and_prints_table_1(mirror, built):
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (mirror / "fetched").read_text().split() == URLS
    assert (work / "text" / "test.pe").read_text() == zipfile.ZipFile(mirror / "test_pe.zip").read("test.pe").decode()
    table = r.stdout.split("== Table 1, APE columns")[1].splitlines()
    assert table[3].split()[:3] == ["do", "nothing", "-"] and table[3].split()[3] == "24.8"
    assert table[4].split()[:5] == ["concat", "-", "-", "62.3", "24.4"] and len(table[4].split()) == 7
    assert table[5].split()[:5] == ["hier", "no", "no", "62.3", "24.1"] and len(table[5].split()) == 7
    do_nothing = table[3].split()[-2:]
    assert float(do_nothing[1]) > 0 and float(do_nothing[0]) < 100  # the MT differs from every post-edit
    for name in ("concat", "hier"):
        out = (work / "out" / f"{name}.test.pe").read_text().split("\n")
        assert len(out) == 9 and "<keep>" not in " ".join(out)  # the edited text, one line per test line
        config = (work / "models" / name / "config.yaml").read_text()
        assert "decoder_cell: gru" in config and "lr: 0.0001" in config and "optimizer: adam" in config
    assert "combination: hierarchical" in (work / "models" / "hier" / "config.yaml").read_text()
    assert "sentinel: false" in (work / "models" / "hier" / "config.yaml").read_text()
    assert '"ape_edits": "mt"' in (work / "data" / "manifest.json").read_text()


def test_a_second_run_skips_what_is_done_and_a_stopped_training_resumes(mirror, built, tmp_path):
    work, _ = built
    fetched = (mirror / "fetched").read_text()
    again = recipe(mirror, work)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (mirror / "fetched").read_text() == fetched  # nothing downloaded again
    assert "parameters" not in again.stderr and "translated" not in again.stderr
    assert again.stdout == built[1].stdout  # the same table, from the stored scores
    (work / "models" / "hier" / "done").unlink()  # as if training had been stopped: it goes on with --resume
    dry = recipe(mirror, work, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    trains = [line for line in dry.stdout.splitlines() if " train " in f" {line} "]
    assert len(trains) == 1 and "models/hier" in trains[0] and trains[0].rstrip().endswith("--resume")
    assert "preprocess" not in dry.stdout and "translate" not in dry.stdout


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2", CONFIGS="flat-share-sent")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "--ape-edits mt" in out and "--vocab word:100" in out and "--metric ter" in out
    assert "torchrun --nproc-per-node 2 -m nmtkit train" in out
    assert "--combination flat --share-projections --sentinel" in out and "--decoder-cell gru" in out
    assert "-i " + str(tmp_path / "w" / "text" / "test.src") in out
    assert "get.sh" in r.stdout and "TrainDev.zip" in r.stdout
    assert not (tmp_path / "w").exists()


def test_a_folder_whose_path_holds_spaces_is_one_input(mirror, tmp_path):
    """(WMT16_APE was split at spaces, as a list of archives: "my data" was two inputs, neither there.)"""
    folder = tmp_path / "my data"
    for archive in ("TrainDev.zip", "Test.zip", "test_pe.zip"):
        zipfile.ZipFile(mirror / archive).extractall(folder)
    r = recipe(mirror, tmp_path / "w", "--dry-run", WMT16_APE=str(folder))
    assert r.returncode == 0, r.stderr
    assert f"cp {tmp_path}/my\\ data/train/train.src {tmp_path}/w/text/train.src.part" in r.stdout


@pytest.mark.parametrize("fault", ["missing", "corrupt"])
def test_a_missing_or_corrupt_download_stops_with_one_line(mirror, tmp_path, fault):
    if fault == "corrupt":
        (tmp_path / "Test.zip").write_text("<html>not found</html>")
        get = f'#!/bin/sh\ncp "{tmp_path}/$(basename "$2")" "$1" 2>/dev/null || cp "{mirror}/$(basename "$2")" "$1"\n'
    else:
        get = f'#!/bin/sh\n[ "$(basename "$2")" = Test.zip ] && exit 22\ncp "{mirror}/$(basename "$2")" "$1"\n'
    (tmp_path / "get.sh").write_text(get)
    (tmp_path / "get.sh").chmod(0o755)
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(tmp_path / "get.sh"))
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 1. data failed") and "Test.zip" in last
    if fault == "corrupt":
        assert "not a readable zip archive" in last
    assert not (tmp_path / "w" / "downloads" / "Test.zip").exists()
    assert (tmp_path / "w" / "downloads" / "TrainDev.zip").exists()


def test_the_data_must_be_given_and_rows_known(tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", WMT16_APE="")
    assert r.returncode == 2 and "WMT16_APE" in r.stderr and "LRT-1632" in r.stderr
    r = run_recipe(RECIPE, tmp_path / "w", WMT16_APE=str(tmp_path), CONFIGS="concat flat-nope")
    assert r.returncode == 2 and "flat-nope" in r.stderr
