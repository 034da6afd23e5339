"""recipes/wmt14_enfr.sh on a tiny made-up stand-in for Schwenk's selection of the WMT'14 English-French bitexts
(LIUM's bitexts.tgz and dev+test.tgz in their layout, served by a mock downloader under their official addresses):
its data and corpus, a failing training that stops it with one line naming the stage (and a second run that
resumes there), its --dry-run. The stages after the corpus, which it shares with recipes/wmt14_ende.sh
(recipes/wmt14_target_attn.sh), run end to end in test_wmt14_ende.py."""
import gzip
import json
import subprocess
from pathlib import Path

import pytest

from tests.recipes.mirror import lines, parallel, run_recipe, tgz

RECIPE = Path(__file__).parents[2] / "recipes" / "wmt14_enfr.sh"
LIUM = "http://www-lium.univ-lemans.fr/~schwenk/cslm_joint_paper/data"
PARTS = ["ep7_pc45", "nc9", "dev08_11", "crawl", "ccb2_pc30", "un2000_pc34"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """bitexts.tgz (bitexts.selected/PART.{en,fr}.gz) and dev+test.tgz (dev/ntst1213, dev/ntst14), already
    tokenised as LIUM's are, and a downloader serving them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    parts = {part: parallel(4 + i, "fr", i) for i, part in enumerate(PARTS)}
    tokenised = {part: tuple([t.replace(",", " ,").replace(".", " .") for t in side] for side in texts)
                 for part, texts in parts.items()}
    tgz(root / "bitexts.tgz", {f"bitexts.selected/{part}.{lang}.gz": gzip.compress(lines(texts[k]).encode())
                               for part, texts in tokenised.items() for k, lang in enumerate(("en", "fr"))})
    dev, test = parallel(4, "fr", 10), parallel(3, "fr", 11)
    tgz(root / "dev+test.tgz", {"dev/ntst1213.en": lines(dev[0]), "dev/ntst1213.fr": lines(dev[1]),
                                "dev/ntst14.en": lines(test[0]), "dev/ntst14.fr": lines(test[1])})
    (root / "get.sh").write_text(f'#!/bin/sh\necho "$2" >> "{root}/fetched"\ncp "{root}/$(basename "$2")" "$1"\n')
    (root / "get.sh").chmod(0o755)
    return root, [t for part in PARTS for t in tokenised[part][1]], test[0]


def recipe(root, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{"DOWNLOADER": str(root / "get.sh"), "DEVICE": "cpu", **env})


def test_the_data_and_corpus_then_a_failing_training_stops_with_one_line_and_a_second_run_resumes_there(
        mirror, tmp_path):
    root, train_fr, test_en = mirror
    work = tmp_path / "w"
    r = recipe(root, work, OVERRIDES="--no-such-option 1")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith(
        "error: step 3. RNNsearch, the warm start (Adadelta) failed: nmtkit train --config ")
    assert (root / "fetched").read_text().split() == [f"{LIUM}/bitexts.tgz", f"{LIUM}/dev+test.tgz"]
    assert (work / "text" / "train.fr").read_text() == lines(train_fr)  # the six parts, in order, as they are
    assert (work / "text" / "test.en").read_text() == lines(test_en)
    manifest = json.loads((work / "data" / "manifest.json").read_text())
    assert manifest["options"]["vocab"] == "word:30000" and manifest["options"]["max_len"] == 50
    assert not (work / "models" / "rnnsearch" / "done").exists()
    again = recipe(root, work, OVERRIDES="--no-such-option 1")  # nothing fetched or built again; the same error
    assert again.returncode == 1 and again.stderr.strip().splitlines()[-1] == r.stderr.strip().splitlines()[-1]
    assert len((root / "fetched").read_text().split()) == 2 and "wrote corpus" not in again.stderr


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    root = mirror[0]
    r = recipe(root, tmp_path / "w", "--dry-run")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    unpacked = tmp_path / "w" / "unpacked"
    assert ("gzip -dc " + " ".join(f"{unpacked}/bitexts/bitexts.selected/{part}.fr.gz" for part in PARTS)
            + f" > {tmp_path}/w/text/train.fr") in out
    assert f"cat {unpacked}/dev+test/dev/ntst14.en > {tmp_path}/w/text/test.en" in out
    assert any("--vocab word:30000 --max-len 50" in line for line in out)
    trains = [line for line in out if line.startswith("nmtkit train")]
    assert len(trains) == 3 and "--clip-norm 1.0" in trains[1] and "--clip-norm 1.0" in trains[2]
    assert f"curl -fL --retry 3 -o {tmp_path}/w/downloads/bitexts.tgz.part {LIUM}/bitexts.tgz" in \
        recipe(root, tmp_path / "w", "--dry-run", DOWNLOADER="curl -fL --retry 3 -o").stdout
    assert not (tmp_path / "w").exists()


def test_a_missing_archive_stops_with_one_line_and_the_shared_part_is_no_recipe(tmp_path):
    r = recipe(tmp_path, tmp_path / "w", LIUM_BITEXTS=str(tmp_path / "nope.tgz"))  # an input: checked before any step
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1] == (
        f"error: LIUM_BITEXTS: {tmp_path}/nope.tgz: no such file or folder")
    assert not (tmp_path / "w").exists()
    shared = subprocess.run(["bash", str(RECIPE.parent / "wmt14_target_attn.sh")], capture_output=True, text=True)
    assert shared.returncode == 2 and "run one of them" in shared.stderr
