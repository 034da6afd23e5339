"""recipes/libreoffice_ende.sh (and _enfr, _enzh: one body, recipes/libreoffice.sh) end to end on tiny made-up
libreoffice-help packages served by a fake Debian mirror: the corpus, rnnsearch, target-attn warm-started from it,
bitatt-rnn, the table, bucket-bleu and the attention pictures; its resumption, its --dry-run, the packages taken from
a local folder, and one-line errors for bad downloads, failed steps and wrong settings."""
import shutil
from pathlib import Path

import pytest

from nmtkit.data.helppages import build_corpus
from tests.data.helpdebs import toy_help
from tests.recipes.mirror import downloader, run_recipe

RECIPES = Path(__file__).parents[2] / "recipes"
RECIPE = RECIPES / "libreoffice_ende.sh"
POOL = "https://deb.debian.org/debian/pool/main/libr/libreoffice"
URLS = [f"{POOL}/libreoffice-help-{lang}_7.4.7-1+deb12u14_all.deb" for lang in ("en-us", "de")]
TINY = {"SIZES": "--emb-size 8 --enc-size 8 --dec-size 8 --att-size 8", "STEPS": "4", "BATCH": "8",
        "VALID_EVERY": "2", "VOCAB": "spm:60", "PICTURES": "1", "BEAM": "2", "DEV_PAGES": "0.2", "TEST_PAGES": "0.2",
        "DEVICE": "cpu", "OMP_NUM_THREADS": "1"}
MODELS = ["rnnsearch", "target-attn", "bitatt-rnn"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """libreoffice-help-en-us and -de of 30 toy pages, served by a downloader that logs what it fetched."""
    root = tmp_path_factory.mktemp("mirror")
    toy_help(root)
    downloader(root, root)
    return root


def recipe(mirror, work, *args, script=RECIPE, **env):
    return run_recipe(script, work, *args, **{"DOWNLOADER": str(mirror / "get.sh"), **TINY, **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_builds_the_corpus_trains_three_models_and_compares_them(mirror, built, tmp_path):
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (mirror / "fetched").read_text().split() == URLS
    build_corpus(mirror / Path(URLS[0]).name, mirror / Path(URLS[1]).name, tmp_path / "lo", dev=0.2, test=0.2)
    for name in ("train.en", "train.de", "test.de"):
        assert (work / "text" / name).read_text() == (tmp_path / "lo" / name).read_text()
    table = r.stdout.split("== LibreOffice en-de: test BLEU and chrF")[1].split("== BLEU by source length")[0]
    rows = [line.split() for line in table.splitlines()[2:]]
    assert [row[0] for row in rows] == MODELS and rows[1][1:5] == ["2", "+", "2", "(warm"]
    assert all(0 <= float(x) <= 100 for row in rows for x in row[-2:])
    buckets = r.stdout.split("== BLEU by source length")[1]
    assert all(name in buckets for name in MODELS) and "all" in buckets and "…" not in buckets
    assert (work / "scores" / "buckets.png").stat().st_size > 0
    assert f"== attention pictures: 1 test sentences in {work}/pictures" in r.stdout
    pictures = sorted(p.name for p in (work / "pictures").iterdir())
    i = pictures[0].split(".")[1]  # the first test sentence of 8 to 16 words
    assert [len(line.split()) for line in (work / "text" / "test.en").read_text().splitlines()].index(
        next(n for n in (len(line.split()) for line in (work / "text" / "test.en").read_text().splitlines())
             if 8 <= n <= 16)) == int(i)
    assert pictures == sorted(f"{m}.{i}.{kind}.png" for m in MODELS for kind in ("source", "target")
                              if (m, kind) != ("rnnsearch", "target"))
    steps = {m: (work / "models" / m / "train.jsonl").read_text().count('"type": "valid"') for m in
             ("rnnsearch-half", "rnnsearch", "target-attn", "bitatt-rnn")}
    assert steps == {"rnnsearch-half": 1, "rnnsearch": 2, "target-attn": 1, "bitatt-rnn": 2}  # every 2 updates
    config = (work / "models" / "target-attn" / "config.yaml").read_text()
    assert "arch: target-attn" in config and "emb_size: 8" in config and "clip_norm: 1.0" in config
    assert "max_steps: 2" in config and "batch_size: 8" in config
    assert f"warm start from {work}/models/rnnsearch-half/last.pt (rnnsearch)" in r.stderr
    assert "learning rate 0.001 from the checkpoint (--init-lr); optimiser state loaded" in r.stderr


def test_a_second_run_skips_what_is_done_and_a_stopped_training_resumes(mirror, built):
    work, first = built
    fetched = (mirror / "fetched").read_text()
    again = recipe(mirror, work)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (mirror / "fetched").read_text() == fetched  # nothing downloaded again
    assert "parameters" not in again.stderr and "translated" not in again.stderr
    assert again.stdout == first.stdout  # the same tables, from the stored scores
    (work / "models" / "target-attn" / "done").unlink()  # as if training had been stopped: it goes on with --resume
    dry = recipe(mirror, work, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    commands = [line for line in dry.stdout.splitlines() if line.strip()]
    assert len(commands) == 2 and "models/target-attn" in commands[0]
    assert commands[0].rstrip().endswith("--resume") and "--init" not in commands[0]  # no warm start again
    assert commands[1].startswith("touch ") and commands[1].rstrip().endswith("target-attn/done")


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2", script=RECIPES / "libreoffice_enzh.sh")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "-o " + str(tmp_path / "w" / "text") in out and "--dev 0.2 --test 0.2" in out
    assert f"{tmp_path}/w/downloads/libreoffice-help-zh-cn_7.4.7-1+deb12u14_all.deb" in out
    assert f"{POOL}/libreoffice-help-zh-cn_7.4.7-1+deb12u14_all.deb" in out  # the download
    assert "--tgt zh --vocab spm:60 --max-len 80" in out
    assert out.count("torchrun --nproc-per-node 2 -m nmtkit train") == 4
    assert "--arch target-attn --max-steps 2 --emb-size 8" in out and "--init-optimizer --init-lr" in out
    assert "--metric bleu --tokenize zh" in out and "--bleu-tokenize zh" in out
    assert out.count("nmtkit plot-attn") == 5 and "--index INDEX" in out
    stages = [line for line in r.stderr.splitlines() if line.startswith("== ")]
    assert [s.split()[1] for s in stages] == ["1.", "2.", "3.", "4.", "5.", "6.", "7.", "8."]
    assert not (tmp_path / "w").exists()
    lo = tmp_path / "lo-ende"
    lo.mkdir()
    for name in ("train", "dev", "test"):
        for lang in ("en", "zh"):
            (lo / f"{name}.{lang}").write_text("")
    corpus = recipe(mirror, tmp_path / "w", "--dry-run", CORPUS=str(lo), script=RECIPES / "libreoffice_enzh.sh")
    assert corpus.returncode == 0 and "helppages" not in corpus.stdout and "downloads" not in corpus.stdout
    assert f"--train {lo}/train --valid {lo}/dev" in corpus.stdout
    assert not (tmp_path / "w").exists()


def test_the_packages_from_a_local_folder_and_a_failed_step_stops_with_one_line(mirror, tmp_path):
    debs = tmp_path / "debs"
    debs.mkdir()
    for url in URLS:  # as 'apt-get download' names them: the epoch in the version
        shutil.copy(mirror / Path(url).name, debs / Path(url).name.replace("_7.4.7", "_4%3a7.4.7"))
    r = recipe(mirror, tmp_path / "w", LO_DEBS=str(debs), DOWNLOADER="false", VOCAB="nope:1")
    assert r.returncode == 1 and "Traceback" not in r.stderr  # nmtkit's one line, then the recipe's
    assert r.stderr.splitlines()[-2].startswith("error: --vocab: expected KIND:SIZE")
    assert r.stderr.splitlines()[-1].startswith("error: step 2. preprocess: SentencePiece nope:1, training pairs of at "
                                                "most 80 pieces failed: nmtkit preprocess --train")
    assert (tmp_path / "w" / "text" / "train.de").stat().st_size > 0
    assert not (tmp_path / "w" / "downloads").exists() and not (tmp_path / "w" / "data").exists()
    (debs / "libreoffice-help-de_4%3a7.4.7-1+deb12u14_all.deb").unlink()
    for args in ((), ("--dry-run",)):
        r = recipe(mirror, tmp_path / "v", *args, LO_DEBS=str(debs))
        assert r.returncode == 2 and r.stderr.splitlines()[-1] == \
            f"error: LO_DEBS: {debs} holds no libreoffice-help-de_*.deb"
    assert not (tmp_path / "v").exists()


def test_the_newest_package_of_a_local_folder_is_taken(mirror, tmp_path):
    """(sorted as text, deb12u9 came after deb12u14; a folder whose name holds [ ] was read as a pattern)"""
    debs = tmp_path / "debs [1]"
    debs.mkdir()
    for version in (9, 14):
        for lang in ("en-us", "de"):
            (debs / f"libreoffice-help-{lang}_4%3a7.4.7-1+deb12u{version}_all.deb").write_bytes(b"")
    r = recipe(mirror, tmp_path / "w", "--dry-run", LO_DEBS=str(debs))
    assert r.returncode == 0 and "deb12u14_all.deb" in r.stdout and "deb12u9" not in r.stdout, r.stderr


@pytest.mark.parametrize("fault", ["missing", "corrupt", "short"])
def test_a_missing_or_corrupt_download_stops_with_one_line(mirror, tmp_path, fault):
    name = Path(URLS[1]).name
    if fault == "corrupt":
        get = downloader(tmp_path, mirror, junk=name)
    else:  # (a failed download, or one cut short that says it succeeded: its first kilobyte alone)
        get = tmp_path / "get.sh"
        broken = "exit 22" if fault == "missing" else f'head -c 1000 "{mirror}/{name}" > "$1"; exit 0'
        get.write_text(f'#!/bin/sh\ncase "$2" in *{name}) {broken};; esac\ncp "{mirror}/$(basename "$2")" "$1"\n')
        get.chmod(0o755)
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(get))
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: step 1. corpus: the LibreOffice help in English and de") and name in last
    if fault != "missing":
        assert last.endswith(f"{URLS[1]}: not a whole Debian package (.deb) (removed; run again to fetch it again)")
    assert not (tmp_path / "w" / "downloads" / name).exists() and not (tmp_path / "w" / "text").exists()
    assert (tmp_path / "w" / "downloads" / Path(URLS[0]).name).exists()


def test_wrong_settings_and_the_shared_body_alone(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", STEPS="1")
    assert r.returncode == 2 and "STEPS: expects at least 2" in r.stderr
    r = recipe(mirror, tmp_path / "w", PICTURES="three")
    assert r.returncode == 2 and r.stderr == "error: PICTURES: expects a whole number above 0, got 'three'\n"
    (tmp_path / "train.en").write_text("")
    r = recipe(mirror, tmp_path / "w", "--dry-run", CORPUS=str(tmp_path))
    assert r.returncode == 2 and r.stderr.splitlines()[1:] == [
        f"error: CORPUS: {tmp_path}/{name}: no such file or folder"
        for name in ("train.de", "dev.en", "dev.de", "test.en", "test.de")]
    r = run_recipe(RECIPES / "libreoffice.sh", tmp_path / "w")
    assert r.returncode == 2 and "share: run one of them" in r.stderr
    assert not (tmp_path / "w").exists()
