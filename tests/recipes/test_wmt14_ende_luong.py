"""recipes/wmt14_ende_luong.sh end to end on a tiny made-up stand-in for the authors' WMT'14 English-German files
(the Stanford NMT page's train, newstest2013/2014, 50K vocabularies and dictionary, served by a mock downloader
under their official addresses): the source reversed, one variant trained 8 "epochs" then one halved epoch
warm-started from it, newstest2014 translated, <unk> replaced with the dictionary, the scores and Table 4; its
resumption, its --dry-run for every variant, its checks of the settings and a failed download's one-line error."""
from pathlib import Path

import pytest

from tests.conftest import run
from tests.recipes.mirror import WORDS, downloader, lines, parallel, run_recipe

RECIPE = Path(__file__).parents[2] / "recipes" / "wmt14_ende_luong.sh"
BASE = "https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de"
FILES = ["train.en", "train.de", "newstest2013.en", "newstest2013.de", "newstest2014.en", "newstest2014.de",
         "vocab.50K.en", "vocab.50K.de", "dict.en-de"]
TINY = "--layers 1 --emb-size 8 --enc-size 8 --dec-size 8 --max-steps 2 --valid-every 2 --batch-size 8"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The authors' files (tokenised text; an English vocabulary that leaves out two words and a German one of
    three, so that <unk> is most of the target and even a model of two updates writes it; the dictionary of every
    word) and a downloader serving them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    for name, (n, seed) in {"train": (40, 1), "newstest2013": (4, 2), "newstest2014": (5, 3)}.items():
        for lang, text in zip(("en", "de"), parallel(n, "de", seed)):
            (root / f"{name}.{lang}").write_text(lines(t.replace(",", " ,").replace(".", " .") for t in text))
    kept = sorted(WORDS)[2:]
    (root / "vocab.50K.en").write_text(lines(["<unk>", "<s>", "</s>", ",", "."] + kept))
    (root / "vocab.50K.de").write_text(lines(["<unk>", "<s>", "</s>", ",", "."] + [WORDS[w][0] for w in kept[:3]]))
    (root / "dict.en-de").write_text(lines(f"{w} {de}" for w, (de, _) in WORDS.items()))
    downloader(root, root)
    return root


def recipe(root, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{"DOWNLOADER": str(root / "get.sh"), "VARIANTS": "local-p-general",
                                              "HALVINGS": "1", "OVERRIDES": TINY, "BEAM": "2", "DEVICE": "cpu",
                                              **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_trains_a_variant_with_its_halved_epoch_and_prints_table_4(mirror, built):
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (mirror / "fetched").read_text().split() == [f"{BASE}/{name}" for name in FILES]
    source = (mirror / "newstest2014.en").read_text().splitlines()
    assert (work / "text" / "test.en").read_text() == lines(" ".join(s.split()[::-1]) for s in source)  # reversed
    assert (work / "text" / "test.de").read_text() == (mirror / "newstest2014.de").read_text()
    assert (work / "data" / "vocab.src.txt").read_text().split()[4:] == [",", "."] + sorted(WORDS)[2:]
    models = work / "models" / "local-p-general"
    first, halved = ((models / run / "config.yaml").read_text() for run in ("lr-1", "lr-0.5"))
    for config in (first, halved):
        assert "arch: luong" in config and "attention: local-p" in config and "global_attention: general" in config
        assert "encoder_type: rnn" in config and "optimizer: sgd" in config and "clip_norm: 5.0" in config
    assert "lr: 1.0" in first and "max_epochs: 8" in first
    assert "lr: 0.5" in halved and "max_epochs: 1" in halved and "seed: 2" in halved
    assert f"warm start from {models}/lr-1/last.pt" in r.stderr
    out = work / "out" / "local-p-general"
    plain, replaced = (Path(f"{out}.{hyp}.de").read_text().splitlines() for hyp in ("test", "test.unk"))
    assert len(plain) == len(replaced) == 5
    assert "<unk>" in " ".join(plain) and "<unk>" not in " ".join(replaced)  # replaced from the dictionary
    for hyp in ("test", "test.unk"):  # each BLEU scores its own output
        expected = run(["score", "--metric", "bleu", "--tokenize", "none", "-r", work / "text" / "test.de",
                        "-i", f"{out}.{hyp}.de", "--score-only"]).stdout.strip()
        assert (work / "scores" / f"local-p-general.{hyp}.bleu").read_text().strip() == expected
    table = r.stdout.split("== Table 4 (Luong et al. 2015)")[1].splitlines()
    row = table[3].split()
    assert row[:5] == ["local-p", "(general)", "5.9", "19.0", "20.9"] and len(row) == 8
    again = recipe(mirror, work)  # everything done: nothing fetched, trained or translated again
    assert again.returncode == 0 and again.stdout == r.stdout and len((mirror / "fetched").read_text().split()) == 9
    assert "parameters" not in again.stderr and "translated" not in again.stderr


def test_a_dry_run_prints_each_step_of_every_variant_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", VARIANTS="", HALVINGS="", OVERRIDES="")
    assert r.returncode == 0, r.stderr
    out, w = r.stdout.splitlines(), tmp_path / "w"
    trains = [line for line in out if line.startswith("nmtkit train")]
    assert len(trains) == 7 * 5
    flags = [(t.split()[5], t.split()[7]) for t in trains[::5]]
    assert flags == [("global", "location"), ("global", "dot"), ("global", "general"), ("local-m", "dot"),
                     ("local-m", "general"), ("local-p", "dot"), ("local-p", "general")]
    runs = [t.split("--save-dir ")[1].split()[0] for t in trains[:5]]
    rates = ("1", "0.5", "0.25", "0.125", "0.0625")
    assert runs == [str(w / "models" / "global-location" / f"lr-{lr}") for lr in rates]
    assert f"--lr 0.125 --max-epochs 1 --seed 4 --data {w}/data --device cpu --init-from " \
        f"{w}/models/global-location/lr-0.25/last.pt" in trains[3]
    assert any(line.startswith("nmtkit translate -m " + str(w / "models/local-m-dot/lr-0.0625/last.pt"))
               for line in out)
    assert f"--dict {w}/downloads/dict.en-de" in r.stdout and r.stdout.count("--tokenize none") == 14
    assert f"--src-vocab {w}/downloads/vocab.50K.en --tgt-vocab {w}/downloads/vocab.50K.de --max-len 50" in r.stdout
    assert f"reversed {w}/downloads/train.en > {w}/text/train.en" in out
    assert not w.exists()


def test_unknown_settings_are_refused(tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", VARIANTS="global-dot local-x-dot")
    assert r.returncode == 2 and "VARIANTS: unknown variant 'local-x-dot'" in r.stderr
    r = run_recipe(RECIPE, tmp_path / "w", HALVINGS="four")
    assert r.returncode == 2 and r.stderr == "error: HALVINGS: expects a number of epochs, got 'four'\n"


def test_a_failed_download_stops_the_recipe_with_one_line(mirror, tmp_path):
    get = tmp_path / "get.sh"
    get.write_text(f'#!/bin/sh\n[ "$(basename "$2")" = dict.en-de ] && exit 22\ncp "{mirror}/$(basename "$2")" "$1"\n')
    get.chmod(0o755)
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(get))
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == (
        f"error: step 1. data: the authors' WMT'14 English-German, the source reversed failed: {get} "
        f"{tmp_path}/w/downloads/dict.en-de.part {BASE}/dict.en-de")
    assert not (tmp_path / "w" / "text").exists()
