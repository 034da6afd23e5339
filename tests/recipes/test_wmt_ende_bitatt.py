"""recipes/wmt_ende_bitatt.sh end to end on a tiny made-up stand-in for the WMT'15 English-German data and the
newstest2014-2016 sets (the six archives in their layout, served under their official addresses by a mock
downloader): the data, Moses tokenisation, BPE, BiTAtt-T trained and averaged, two test sets translated,
detokenised and scored, Table 2's WMT columns; its resumption, its --dry-run for every system. The stages it
shares with recipes/nist_zhen.sh (recipes/bitatt_experiment.sh) run end to end here only."""
import json
from pathlib import Path

import pytest

from tests.recipes.mirror import lines, parallel, run_recipe, sgm, tgz, url_downloader

RECIPE = Path(__file__).parents[2] / "recipes" / "wmt_ende_bitatt.sh"
URLS = ["http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "http://www.statmt.org/wmt15/training-parallel-nc-v10.tgz",
        "http://data.statmt.org/wmt16/translation-task/test.tgz", "http://www.statmt.org/wmt14/test-filtered.tgz",
        "http://www.statmt.org/wmt15/test.tgz"]
TINY = ("--d-model 8 --ffn-size 16 --heads 2 --enc-layers 1 --dec-layers 1 --max-steps 2 --valid-every 1 "
        "--warmup-steps 1 --batch-size 8")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The archives under served/HOST/PATH, a few made-up sentences each, and a downloader serving them."""
    root = tmp_path_factory.mktemp("mirror")
    (ep_en, ep_de), (cc_en, cc_de), (nc_en, nc_de) = (parallel(n, "de", s) for n, s in ((20, 1), (8, 2), (8, 3)))
    tests = {year: parallel(n, "de", year) for year, n in ((2014, 4), (2015, 3), (2016, 3))}
    archives = {
        URLS[0]: {"training/europarl-v7.de-en.en": lines(ep_en), "training/europarl-v7.de-en.de": lines(ep_de)},
        URLS[1]: {"commoncrawl.de-en.en": lines(cc_en), "commoncrawl.de-en.de": lines(cc_de)},
        URLS[2]: {"news-commentary-v10.de-en.en": lines(nc_en), "news-commentary-v10.de-en.de": lines(nc_de)},
        URLS[3]: {"test/newstest2016-ende-src.en.sgm": sgm(tests[2016][0]),
                  "test/newstest2016-ende-ref.de.sgm": sgm(tests[2016][1], "refset")},
        URLS[4]: {"test/newstest2014-deen-src.en.sgm": sgm(tests[2014][0]),
                  "test/newstest2014-deen-ref.de.sgm": sgm(tests[2014][1], "refset")},
        URLS[5]: {"test/newstest2015-ende-src.en.sgm": sgm(tests[2015][0]),
                  "test/newstest2015-ende-ref.de.sgm": sgm(tests[2015][1], "refset")}}
    for url, files in archives.items():
        path = root / url.split("://")[1]
        path.parent.mkdir(parents=True, exist_ok=True)
        tgz(path, files)
    url_downloader(root, root)
    return root, tests


def recipe(mirror, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{"DOWNLOADER": str(mirror[0] / "get.sh"), "SYSTEMS": "bitatt-t",
                                              "OVERRIDES": TINY, "BEAM": "2", "DEVICE": "cpu", **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_trains_bitatt_t_scores_both_test_sets_and_prints_table_2(mirror, built):
    root, tests = mirror
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (root / "fetched").read_text().split() == URLS
    assert (work / "raw" / "dev.de").read_text() == lines(tests[2016][1])  # newstest2016 validates
    for year in (2014, 2015):  # the references as published; the sources tokenised
        assert (work / "refs" / f"newstest{year}.ref0").read_text() == lines(tests[year][1])
        assert all(t.endswith(" .") for t in (work / "text" / f"newstest{year}.en").read_text().splitlines())
        detok = (work / "out" / f"bitatt-t.newstest{year}.detok").read_text().splitlines()
        assert len(detok) == len(tests[year][1]) and not any(" ." in t or " ," in t for t in detok)
    manifest = json.loads((work / "data" / "manifest.json").read_text())
    assert manifest["options"]["vocab"] == "spm-bpe:32000" and manifest["options"]["max_len"] == 50
    config = (work / "models" / "bitatt-t" / "config.yaml").read_text()
    assert "arch: bitatt-transformer" in config and "reverse_context: reference" in config
    assert "lr_schedule: inverse-sqrt" in config and "label_smoothing: 0.1" in config and "d_model: 8" in config
    assert (work / "models" / "bitatt-t" / "averaged.pt").exists()
    table = r.stdout.split("WMT English-German, and this run: SacreBLEU")[1].splitlines()
    assert table[1].split() == ["newstest2014", "newstest2015", "average"]
    assert table[2].split() == ["BiTAtt-T", "paper", "28.15", "30.13", "29.14"]
    ours = table[3].split()
    assert ours[0] == "nmtkit" and len(ours) == 4
    assert float(ours[3]) == pytest.approx((float(ours[1]) + float(ours[2])) / 2, abs=0.006)


def test_a_second_run_skips_what_is_done(mirror, built):
    work, first = built
    fetched = (mirror[0] / "fetched").read_text()
    again = recipe(mirror, work)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout == first.stdout and (mirror[0] / "fetched").read_text() == fetched
    assert "parameters" not in again.stderr and "translated" not in again.stderr


def test_a_dry_run_prints_each_step_of_every_system_and_runs_none(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2", SYSTEMS="", OVERRIDES="")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    w, configs = tmp_path / "w", RECIPE.parent / "configs"
    trains = [line.split() for line in out if line.startswith("torchrun --nproc-per-node 2 -m nmtkit train")]
    assert [(t[7], t[9]) for t in trains] == [
        (str(configs / "bitatt_rnn.yaml"), "rnnsearch"), (str(configs / "bitatt_rnn.yaml"), "ftatt-rnn"),
        (str(configs / "bitatt_rnn.yaml"), "rtatt-rnn"), (str(configs / "bitatt_rnn.yaml"), "bitatt-rnn"),
        (str(configs / "bitatt_transformer.yaml"), "transformer"),
        (str(configs / "bitatt_transformer.yaml"), "bitatt-transformer")]
    assert ["--reverse-context" in t for t in trains] == [False, False, True, True, False, True]
    assert [line.split()[3] for line in out if line.startswith("nmtkit average")] == [str(w / "models" / "tfmr"),
                                                                                      str(w / "models" / "bitatt-t")]
    translations = [line.split() for line in out if line.startswith("nmtkit translate")]
    assert len(translations) == 12 and all(t[5] == "2" for t in translations)
    assert translations[0][3] == str(w / "models" / "anmt" / "best.pt")
    assert translations[-1][3] == str(w / "models" / "bitatt-t" / "averaged.pt")
    assert f"moses detokenize de {w}/out/anmt.newstest2015 > {w}/out/anmt.newstest2015.detok" in out
    assert (f"nmtkit score --metric bleu -r {w}/refs/newstest2014.ref0 -i {w}/out/tfmr.newstest2014.detok "
            f"--score-only > {w}/scores/tfmr.newstest2014.bleu") in out
    assert any("--vocab spm-bpe:32000 --max-len 50" in line for line in out)
    assert "wmt16-test.tgz" in r.stdout and "wmt15-test.tgz" in r.stdout and "wmt14-test.tgz" in r.stdout
    assert not w.exists()


def test_an_unknown_system_is_refused(tmp_path):
    r = run_recipe(RECIPE, tmp_path / "w", SYSTEMS="anmt bitatt-x")
    assert r.returncode == 2 and "SYSTEMS: unknown system 'bitatt-x'" in r.stderr and not (tmp_path / "w").exists()
