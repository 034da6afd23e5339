"""recipes/nist_zhen.sh end to end on tiny made-up stand-ins for the licensed LDC training text and the NIST02-06
sets (local files, as the recipe takes them): ANMT trained, NIST03-06 translated, detokenised and scored
case-insensitively against four references each, Table 2's NIST columns; its resumption, its --dry-run for every
system, its refusal of missing data (exit code 2) and a failing step's one-line error."""
import json
import random
from pathlib import Path

import pytest

from tests.recipes.mirror import WORDS, lines, run_recipe

RECIPE = Path(__file__).parents[2] / "recipes" / "nist_zhen.sh"
CHINESE = dict(zip(sorted(WORDS), "这 房子 是 小 一 猫 看见 绿 狗 大 和 红".split()))
TINY = "--emb-size 8 --enc-size 8 --dec-size 8 --att-size 8 --readout-size 8 --max-steps 2 --valid-every 2"


def pairs(rng, n):
    """n (segmented Chinese, English) pairs of the made-up language."""
    sentences = [rng.choices(sorted(WORDS), k=rng.randint(3, 8)) for _ in range(n)]
    return [" ".join(CHINESE[w] for w in s) + " 。" for s in sentences], [" ".join(s).capitalize() + "." for s in
                                                                          sentences]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """NIST_TRAIN (train.zh, train.en) and NIST_TEST (nist02..06: .zh and four references .en0-.en3)."""
    root = tmp_path_factory.mktemp("ldc")
    rng = random.Random(5)
    zh, en = pairs(rng, 40)
    (root / "train.zh").write_text(lines(zh))
    (root / "train.en").write_text(lines(en))
    (root / "nist").mkdir()
    for k, name in enumerate(("nist02", "nist03", "nist04", "nist05", "nist06")):
        zh, en = pairs(rng, 3 + k % 2)
        (root / "nist" / f"{name}.zh").write_text(lines(zh))
        for i, ref in enumerate((en, [e.upper() for e in en], [e.replace(" the ", " a ") for e in en], en)):
            (root / "nist" / f"{name}.en{i}").write_text(lines(ref))
    return root


def recipe(data, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{"NIST_TRAIN": str(data / "train"), "NIST_TEST": str(data / "nist"),
                                              "SYSTEMS": "anmt", "OVERRIDES": TINY, "BEAM": "2", "DEVICE": "cpu",
                                              **env})


@pytest.fixture(scope="module")
def built(data, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(data, work)


def test_the_recipe_trains_anmt_scores_nist03_to_06_and_prints_table_2(data, built):
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (work / "text" / "train.zh").read_text() == (data / "train.zh").read_text()  # the Chinese as given
    assert all(t.endswith(" .") for t in (work / "text" / "train.en").read_text().splitlines())  # tokenised
    assert (work / "text" / "dev.zh").read_text() == (data / "nist" / "nist02.zh").read_text()
    for name in ("nist03", "nist04", "nist05", "nist06"):
        for i in range(4):
            assert (work / "refs" / f"{name}.ref{i}").read_text() == (data / "nist" / f"{name}.en{i}").read_text()
        assert (work / "scores" / f"anmt.{name}.bleu").exists()
    manifest = json.loads((work / "data" / "manifest.json").read_text())
    assert manifest["options"]["vocab"] == "word:32000" and manifest["options"]["max_len"] == 50
    config = (work / "models" / "anmt" / "config.yaml").read_text()
    assert "arch: rnnsearch" in config and "optimizer: adam" in config and "batch_size: 80" in config
    table = r.stdout.split("NIST Chinese-English, and this run: case-insensitive BLEU")[1].splitlines()
    assert table[1].split() == ["nist03", "nist04", "nist05", "nist06", "average"]
    assert table[2].split() == ["ANMT", "paper", "36.42", "39.33", "35.37", "35.56", "36.67"]
    assert table[3].split()[0] == "nmtkit" and len(table[3].split()) == 6
    again = recipe(data, work)  # everything done: nothing trained or translated again
    assert again.returncode == 0 and again.stdout == r.stdout
    assert "parameters" not in again.stderr and "translated" not in again.stderr


def test_a_dry_run_prints_each_step_of_every_system_and_runs_none(data, tmp_path):
    r = recipe(data, tmp_path / "w", "--dry-run", SYSTEMS="", OVERRIDES="")
    assert r.returncode == 0, r.stderr
    out, w = r.stdout.splitlines(), tmp_path / "w"
    assert f"moses tokenize en {data}/nist/nist02.en0 > {w}/text/dev.en" in out
    assert any("--src zh --tgt en --vocab word:32000 --max-len 50" in line for line in out)
    assert len([line for line in out if line.startswith("nmtkit train")]) == 6
    scores = [line for line in out if line.startswith("nmtkit score")]
    refs = " ".join(f"-r {w}/refs/nist05.ref{i}" for i in range(4))
    assert len(scores) == 24 and f"nmtkit score --metric bleu --lowercase {refs} -i {w}/out/rtatt-r.nist05.detok " \
        f"--score-only > {w}/scores/rtatt-r.nist05.bleu" in scores
    assert f"moses detokenize en {w}/out/bitatt-r.nist06 > {w}/out/bitatt-r.nist06.detok" in out
    assert not w.exists()


def test_the_licensed_data_must_be_given(data, tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", NIST_TEST=str(data / "nist"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: NIST_TRAIN: ") and "licensed by the LDC" in r.stderr
    (tmp_path / "nist03.zh").write_text("")
    r = run_recipe(RECIPE, tmp_path / "w", NIST_TRAIN=str(data / "train"), NIST_TEST=str(tmp_path))
    assert r.returncode == 2  # every missing file, one line each
    names = [f"nist0{i}.{ext}" for i in range(2, 7) for ext in ("zh", "en0", "en1", "en2", "en3")]
    assert r.stderr.splitlines() == [f"error: NIST_TEST: {tmp_path}/{name}: no such file or folder" for name in names
                                     if name != "nist03.zh"]
    r = run_recipe(RECIPE, tmp_path / "w", "--dry-run", NIST_TRAIN=str(tmp_path / "no" / "train"))
    assert r.returncode == 2 and r.stderr.splitlines() == [  # with --dry-run too
        "error: NIST_TEST: the folder of the NIST02-06 sets, nist02.zh, nist02.en0 .. en3, ...: licensed by the LDC, "
        "so given as local files (see the header)", f"error: NIST_TRAIN: {tmp_path}/no: no such file or folder"]
    assert not (tmp_path / "w").exists()


def test_a_failing_step_stops_the_recipe_with_one_line_naming_it(data, tmp_path):
    nist = tmp_path / "nist"
    nist.mkdir()
    for f in (data / "nist").iterdir():
        (nist / f.name).write_text(f.read_text())
    (nist / "nist04.en2").write_text("one line too few\n")
    r = recipe(data, tmp_path / "w", NIST_TEST=str(nist))
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == (
        f"error: step 1. data: the LDC training text, NIST02 (dev), NIST03-06; English tokenised failed: "
        f"{tmp_path}/w/text/nist04.zh has 3 lines but {tmp_path}/w/refs/nist04.ref2 1 (made from the inputs, "
        "removed: mend the inputs and run again)")
    assert not (tmp_path / "w" / "data").exists() and not (tmp_path / "w" / "refs" / "nist04.ref2").exists()
