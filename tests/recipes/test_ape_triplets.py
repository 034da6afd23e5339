"""recipes/ape_triplets.sh end to end on a tiny corpus of numbers (three folds: four tiny MT models, real MT output,
triplets),
its resumption (a stopped training too), its --dry-run and --gpus, and its one-line errors."""
from pathlib import Path

import pytest

from nmtkit.data.numbers import write_demo_corpus
from tests.recipes.mirror import run_recipe

RECIPE = Path(__file__).parents[2] / "recipes" / "ape_triplets.sh"


def recipe(corpus, work, *args, folds="3"):
    return run_recipe(RECIPE, work, *args, CORPUS=str(corpus), MT_SIZES="--emb-size 8 --enc-size 8 --dec-size 8",
                      MT_STEPS="3", MT_BEAM="1", MT_BATCH="8", DEVICE="cpu", FOLDS=folds)


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
    train = (corpus / "train.en").read_text().split("\n")[:-1]
    for k, lines in enumerate((train[:14], train[14:28], train[28:]), 1):  # jackknifing: 40 lines in 3 folds
        assert (work / "text" / f"fold{k}.en").read_text().split("\n")[:-1] == lines
        outside = (work / "text" / f"without{k}.en").read_text().split("\n")[:-1]
        assert sorted(outside + lines) == sorted(train) and not set(outside) & set(lines)
    folds = [(work / "text" / f"fold{k}.mt").read_text() for k in (1, 2, 3)]
    assert (work / "text" / "train.mt").read_text() == "".join(folds)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("== do nothing") and lines[1].startswith("dev   HTER ") and "BLEU" in lines[2]


def test_a_second_run_skips_what_is_done_and_a_stopped_training_resumes(built):
    corpus, work, first = built
    again = recipe(corpus, work)
    assert again.returncode == 0 and "parameters on" not in again.stderr and "translated" not in again.stderr
    assert again.stdout == first.stdout
    (work / "mt-without1" / "model" / "done").unlink()  # as if its training had been stopped: it goes on with --resume
    dry = recipe(corpus, work, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    trains = [line for line in dry.stdout.splitlines() if " train " in f" {line} "]
    assert len(trains) == 1 and "mt-without1/model " in trains[0] and trains[0].rstrip().endswith("--resume")
    assert "preprocess" not in dry.stdout and "translate" not in dry.stdout


@pytest.mark.parametrize("folds", [2, 5])
def test_a_dry_run_shows_which_model_translates_which_fold(tmp_path, built, folds):
    corpus, _, _ = built
    r = recipe(corpus, tmp_path / "w", "--dry-run", folds=str(folds))
    assert r.returncode == 0, r.stderr
    translations = [line for line in r.stdout.splitlines() if line.startswith("nmtkit translate")]
    assert [t.split()[3].split("/")[-3] for t in translations] == [f"mt-without{k}" for k in range(1, folds + 1)] + [
        "mt-all", "mt-all"]
    assert [t.split()[-1].split("/")[-1] for t in translations] == [f"fold{k}.mt" for k in range(1, folds + 1)] + [
        "dev.mt", "test.mt"]
    assert not (tmp_path / "w").exists()
    for bad in ("1", "two"):
        r = recipe(corpus, tmp_path / "w", folds=bad)
        assert r.returncode == 2 and r.stderr == f"error: FOLDS: a whole number of folds >= 2, got '{bad}'\n"
        assert not (tmp_path / "w").exists()


def test_gpus_train_each_mt_model_under_torchrun(tmp_path, built):
    corpus, _, _ = built
    r = recipe(corpus, tmp_path / "w", "--dry-run", "--gpus", "2")
    assert r.returncode == 0, r.stderr
    trains = [line for line in r.stdout.splitlines() if " train " in f" {line} "]
    assert len(trains) == 4 and all(t.startswith("torchrun --nproc-per-node 2 -m nmtkit train") for t in trains)
    assert [t.split("--save-dir ")[1].split()[0].split("/")[-2] for t in trains] == [
        "mt-without1", "mt-without2", "mt-without3", "mt-all"]
    bad = recipe(corpus, tmp_path / "w", "--gpus", "two")
    assert bad.returncode == 2 and "--gpus" in bad.stderr and not (tmp_path / "w").exists()


def test_a_failed_step_stops_the_recipe_with_one_line(tmp_path, built):
    corpus, _, _ = built
    broken = tmp_path / "corpus"
    broken.mkdir()
    for name in ("train.en", "train.de", "test.en", "test.de"):
        (broken / name).write_text((corpus / name).read_text())
    for name in ("dev.en", "dev.de"):  # an empty dev set: the MT corpus cannot be made
        (broken / name).write_text("")
    r = recipe(broken, tmp_path / "w")
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 2. an MT model without each fold, and one on all the training data failed: "
                           "nmtkit preprocess"), last
    assert not (tmp_path / "w" / "mt-without1" / "model").exists()


def test_a_corpus_folder_is_needed(tmp_path):
    r = recipe(tmp_path / "nothing", tmp_path / "w")
    assert r.returncode == 2 and r.stderr == f"error: CORPUS: {tmp_path}/nothing: no such file or folder\n"
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "train.en").write_text("")
    r = recipe(tmp_path / "nothing", tmp_path / "w", "--dry-run")
    assert r.returncode == 2 and r.stderr.splitlines() == [f"error: CORPUS: {tmp_path}/nothing/{name}: no such file or "
                                                           "folder" for name in ("train.de", "dev.en", "dev.de",
                                                                                 "test.en", "test.de")]
    assert not (tmp_path / "w").exists()


def test_a_score_that_fails_stops_the_recipe(built, tmp_path):
    """(a failing `nmtkit score` inside printf's arguments printed a blank score, and the recipe exited 0)"""
    import shutil

    corpus, work, _ = built
    copy = tmp_path / "w"
    shutil.copytree(work, copy)
    pe = copy / "triplets" / "dev.pe"
    pe.write_text("".join(pe.read_text().splitlines(keepends=True)[:-1]))  # a line short of the MT output
    r = recipe(corpus, copy)
    assert r.returncode == 1 and "has 6 lines but reference" in r.stderr and "HTER  " not in r.stdout
