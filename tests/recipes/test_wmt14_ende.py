"""recipes/wmt14_ende.sh end to end on a tiny made-up stand-in for the WMT'14 English-German data (the five archives
of statmt.org in their layout, served by a mock downloader under their official addresses): the data, Moses
tokenisation, RNNsearch, target attention warm-started from it and then with frozen embeddings, <unk>
replacement, the scores and Table 1; its resumption, its --dry-run and its check of the downloads. The stages it
shares with recipes/wmt14_enfr.sh (recipes/wmt14_target_attn.sh) are run end to end here only."""
from pathlib import Path

import pytest
import torch

from tests.conftest import run
from tests.recipes.mirror import downloader, lines, parallel, run_recipe, sgm, tgz

RECIPE = Path(__file__).parents[2] / "recipes" / "wmt14_ende.sh"
URLS = ["http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        "http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        "http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz", "http://www.statmt.org/wmt14/dev.tgz",
        "http://www.statmt.org/wmt14/test-full.tgz"]
TINY = ("--emb-size 8 --enc-size 8 --dec-size 8 --att-size 8 --readout-size 8 --max-steps 2 --valid-every 2 "
        "--batch-size 8")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """The archives of WMT'14 (Europarl, Common Crawl, News Commentary v9, dev and test-full) with a few made-up
    sentences each, and a downloader serving them by the URL's file name."""
    root = tmp_path_factory.mktemp("mirror")
    (ep_en, ep_de), (cc_en, cc_de), (nc_en, nc_de) = (parallel(n, "de", seed) for n, seed in ((24, 1), (8, 2), (8, 3)))
    (d12_en, d12_de), (d13_en, d13_de), (test_en, test_de) = (parallel(n, "de", s) for n, s in ((3, 4), (3, 5), (5, 6)))
    tgz(root / "training-parallel-europarl-v7.tgz", {"training/europarl-v7.de-en.en": lines(ep_en),
                                                     "training/europarl-v7.de-en.de": lines(ep_de)})
    tgz(root / "training-parallel-commoncrawl.tgz", {"commoncrawl.de-en.en": lines(cc_en),
                                                     "commoncrawl.de-en.de": lines(cc_de)})
    tgz(root / "training-parallel-nc-v9.tgz", {"training/news-commentary-v9.de-en.en": lines(nc_en),
                                               "training/news-commentary-v9.de-en.de": lines(nc_de)})
    tgz(root / "dev.tgz", {"dev/newstest2012.en": lines(d12_en), "dev/newstest2012.de": lines(d12_de),
                           "dev/newstest2013.en": lines(d13_en), "dev/newstest2013.de": lines(d13_de)})
    tgz(root / "test-full.tgz", {"test-full/newstest2014-deen-src.en.sgm": sgm(test_en),
                                 "test-full/newstest2014-deen-ref.de.sgm": sgm(test_de, "refset")})
    downloader(root, root)
    return root, {"train.en": ep_en + cc_en + nc_en, "dev.de": d12_de + d13_de, "test.de": test_de}


def recipe(mirror, work, *args, **env):
    return run_recipe(RECIPE, work, *args, **{"DOWNLOADER": str(mirror[0] / "get.sh"), "OVERRIDES": TINY,
                                              "BEAM": "2", "DEVICE": "cpu", **env})


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    work = tmp_path_factory.mktemp("work") / "w"
    return work, recipe(mirror, work)


def test_the_recipe_downloads_tokenises_trains_both_systems_and_prints_table_1(mirror, built):
    root, text = mirror
    work, r = built
    assert r.returncode == 0, r.stderr[-3000:]
    assert (root / "fetched").read_text().split() == URLS
    for name, expected in text.items():  # the data as published, in the order of the corpora
        assert (work / "raw" / name).read_text() == lines(expected)
    tokenised = (work / "text" / "test.de").read_text().splitlines()
    assert len(tokenised) == 5 and all(t.endswith(" .") and " , " in t for t in tokenised)  # Moses' tokenizer
    config = {name: (work / "models" / name / "config.yaml").read_text()
              for name in ("rnnsearch", "target-attn", "target-attn-frozen")}
    assert "arch: rnnsearch" in config["rnnsearch"] and "optimizer: adadelta" in config["rnnsearch"]
    for name in ("target-attn", "target-attn-frozen"):  # the paper's SGD and En-De clipping, the tiny sizes
        assert "arch: target-attn" in config[name] and "optimizer: sgd" in config[name]
        assert "lr: 0.4" in config[name] and "clip_norm: 5.0" in config[name] and "emb_size: 8" in config[name]
    assert "max_time: 4320.0" in config["target-attn-frozen"]
    assert "from the checkpoint (--init-lr)" in r.stderr  # the frozen run goes on at the rate reached
    before, after = (torch.load(work / "models" / name / "best.pt", weights_only=True)["model"]
                     for name in ("target-attn", "target-attn-frozen"))
    assert all(torch.equal(before[k], after[k]) for k in ("encoder.embedding.weight", "tgt_emb.weight"))
    assert not all(torch.equal(before[k], after[k]) for k in before)
    for name in ("rnnsearch", "target-attn"):
        assert len((work / "out" / f"{name}.test.unk.de").read_text().splitlines()) == 5
        for hyp in ("test", "test.unk"):  # each BLEU scores its own output
            expected = run(["score", "--metric", "bleu", "--tokenize", "none", "-r", work / "text" / "test.de",
                            "-i", work / "out" / f"{name}.{hyp}.de", "--score-only"]).stdout.strip()
            assert (work / "scores" / f"{name}.{hyp}.bleu").read_text().strip() == expected
    assert (work / "scores" / "fig2.png").stat().st_size > 0
    table = r.stdout.split("== Table 1 (target-target-attention.txt), En->De")[1].splitlines()
    rnnsearch, tatt = table[3].split(), table[4].split()
    assert rnnsearch[:2] == ["RNNsearch", "16.47"] and rnnsearch[3] == "-" and rnnsearch[5] == "7.36"
    assert tatt[:3] == ["Target", "Attn", "17.67"] and tatt[4] == "-" and tatt[6] == "6.87"
    assert len(rnnsearch) == 7 and len(tatt) == 8 and float(tatt[-1]) > 1  # every number of this run is there
    assert "== Fig. 2" in r.stdout and "rnnsearch" in r.stdout.split("== Fig. 2")[1]


def test_a_second_run_skips_what_is_done_and_a_stopped_training_resumes_without_its_warm_start(mirror, built):
    work, first = built
    fetched = (mirror[0] / "fetched").read_text()
    again = recipe(mirror, work)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout == first.stdout and (mirror[0] / "fetched").read_text() == fetched
    assert "parameters" not in again.stderr and "translated" not in again.stderr
    (work / "models" / "target-attn-frozen" / "done").unlink()  # as if it had been stopped
    dry = recipe(mirror, work, "--dry-run")
    trains = [line for line in dry.stdout.splitlines() if line.startswith("nmtkit train")]
    assert len(trains) == 1 and "target-attn-frozen" in trains[0] and trains[0].rstrip().endswith("--resume")
    assert "--init-from" not in trains[0] and "--init-lr" not in trains[0] and "--freeze-embeddings" in trains[0]
    assert "translate" not in dry.stdout and "tokenize" not in dry.stdout


def test_a_dry_run_prints_each_step_and_runs_none(mirror, tmp_path):
    fetched = (mirror[0] / "fetched").read_text() if (mirror[0] / "fetched").exists() else ""
    r = recipe(mirror, tmp_path / "w", "--dry-run", "--gpus", "2", OVERRIDES="")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    configs = RECIPE.parent / "configs"
    assert f"moses tokenize de {tmp_path}/w/raw/test.de > {tmp_path}/w/text/test.de" in out
    assert any(line.startswith("segments ") and "test-full/newstest2014-deen-ref.de.sgm" in line for line in out)
    assert any("nmtkit preprocess" in line and "--vocab word:50000 --max-len 50" in line for line in out)
    trains = [line for line in out if line.startswith("torchrun --nproc-per-node 2 -m nmtkit train")]
    assert [line.split()[7] for line in trains] == [str(configs / "wmt14_rnnsearch.yaml"),
                                                    str(configs / "wmt14_target_attn.yaml"),
                                                    str(configs / "wmt14_target_attn.yaml")]
    assert "--clip-norm 5.0" in trains[1] and f"--init-from {tmp_path}/w/models/rnnsearch/best.pt" in trains[1]
    assert "--init-lr --freeze-embeddings" in trains[2] and "target-attn/best.pt" in trains[2]
    assert sum("nmtkit translate" in line and "--beam 2" in line and "--attention-out" in line for line in out) == 2
    assert sum("--tokenize none" in line for line in out) == 4 and "--bleu-tokenize none" in r.stdout
    assert all(url in r.stdout for url in URLS) and "get.sh" in r.stdout
    assert not (tmp_path / "w").exists()
    assert ((mirror[0] / "fetched").read_text() if (mirror[0] / "fetched").exists() else "") == fetched


def test_a_corrupt_download_stops_with_one_line_and_is_removed(mirror, tmp_path):
    r = recipe(mirror, tmp_path / "w", DOWNLOADER=str(downloader(tmp_path, mirror[0], junk="test-full.tgz")))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1] == ("error: step 1. data: Europarl v7, Common Crawl, News Commentary v9;"
                                                 " newstest2012+2013, newstest2014; Moses tokenisation failed: "
                                                 f"{URLS[-1]}: not a readable .tar.gz archive (removed; run again to"
                                                 " fetch it again)")
    assert sorted(p.name for p in (tmp_path / "w" / "downloads").iterdir()) == sorted(u.split("/")[-1]
                                                                                     for u in URLS[:-1])
