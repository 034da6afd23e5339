"""recipes/ape_triplets.sh end to end on a tiny corpus of numbers (three tiny MT models, real MT output, triplets),
its resumption and its --dry-run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nmtkit.data.numbers import write_demo_corpus

RECIPE = Path(__file__).parents[2] / "recipes" / "ape_triplets.sh"


def recipe(corpus, work, *args):
    env = {**os.environ, "CORPUS": str(corpus), "MT_SIZES": "--emb-size 8 --enc-size 8 --dec-size 8",
           "MT_STEPS": "3", "MT_BEAM": "1", "MT_BATCH": "8", "DEVICE": "cpu",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(RECIPE), *args, str(work)], env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    corpus = tmp_path_factory.mktemp("corpus")
    write_demo_corpus(corpus, train=40, valid=6, test=5)
    for side in ("en", "de"):
        (corpus / f"valid.{side}").rename(corpus / f"dev.{side}")
    work = tmp_path_factory.mktemp("work") / "w"
    return corpus, work, recipe(corpus, work)


def test_triplets_pair_real_mt_output_with_the_human_translation(built):
    corpus, work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    for split, n in (("train", 40), ("dev", 6), ("test", 5)):
        src, mt, pe = ((work / "triplets" / f"{split}.{k}").read_text().split("\n")[:-1] for k in ("src", "mt", "pe"))
        assert len(src) == len(mt) == len(pe) == n
        human = (corpus / f"{split}.de").read_text().split("\n")[:-1]
        assert pe == human  # numbers in words: the 13a tokeniser leaves them as they are
    halves = [(work / "text" / f"{h}.mt").read_text() for h in "AB"]
    assert (work / "text" / "train.mt").read_text() == "".join(halves)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("== do nothing") and lines[1].startswith("dev   HTER ") and "BLEU" in lines[2]


def test_a_second_run_skips_what_is_done(built):
    corpus, work, _ = built
    again = recipe(corpus, work)
    assert again.returncode == 0 and "parameters on" not in again.stderr and "translated" not in again.stderr


def test_a_dry_run_shows_which_model_translates_which_half(tmp_path, built):
    corpus, _, _ = built
    r = recipe(corpus, tmp_path / "w", "--dry-run")
    assert r.returncode == 0, r.stderr
    translations = [line for line in r.stdout.splitlines() if line.startswith("nmtkit translate")]
    assert [t.split()[3].split("/")[-3] for t in translations] == ["mt-B", "mt-A", "mt-all", "mt-all"]
    assert [t.split()[-1].split("/")[-1] for t in translations] == ["A.mt", "B.mt", "dev.mt", "test.mt"]
    assert not (tmp_path / "w").exists()


def test_a_corpus_folder_is_needed(tmp_path):
    r = recipe(tmp_path / "nothing", tmp_path / "w")
    assert r.returncode == 2 and "CORPUS" in r.stderr and "train.en" in r.stderr
