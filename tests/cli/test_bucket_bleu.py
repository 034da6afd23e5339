"""nmtkit bucket-bleu end to end: table, JSON, CSV, figure and every error."""
import csv
import json

import pytest
from PIL import Image

from tests.conftest import pipe, run

SRC = ["a b", "a b c d e", "a", "a b c d e f g h"]
REF = ["the cat sat on the mat", "a dog ran in the park today", "hello there friend", "it rains in spain on the plain"]
BASE = ["the cat sat on a mat", "a dog ran in a park", "hello friend", "it rains in spain"]
OTHER = ["the cat sat on the mat", "a dog ran", "hello there friend", "it rains in spain on the plain"]


def files(tmp_path):
    for name, lines in (("src", SRC), ("ref", REF), ("base", BASE), ("other", OTHER)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["bucket-bleu", "--src", tmp_path / "src", "--ref", tmp_path / "ref", "--hyp", f"base={tmp_path / 'base'}",
            "--hyp", f"other={tmp_path / 'other'}", "--buckets", "2,5"]


def test_table_json_csv_and_plot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = files(tmp_path)
    r = run(args + ["--csv", tmp_path / "b.csv", "--plot", tmp_path / "b.png"])
    assert "1-2" in r.stdout and "3-5" in r.stdout and ">5" in r.stdout and "gain" in r.stdout
    rows = list(csv.reader((tmp_path / "b.csv").open()))
    assert rows[0][:3] == ["bucket", "sentences", "BLEU base"] and [row[1] for row in rows[1:]] == ["2", "1", "1", "4"]
    assert run(args + ["--csv", "-"]).stdout == (tmp_path / "b.csv").read_text()  # (instead of the table)
    assert not (tmp_path / "-").exists()
    r = run(args + ["--csv", "-", "--json"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --csv -: --json prints to the standard output too, and the two "
                                             "would mix; give --csv a file\n")
    data = json.loads(run(args + ["--json"]).stdout)
    assert [b["bucket"] for b in data] == ["1-2", "3-5", ">5", "all"]
    assert data[3]["gain"]["other"] > 0 and data[3]["gain"]["base"] == 0
    for row, bucket in zip(rows[1:], data):  # each CSV cell under its own header: the JSON's figure
        cells = dict(zip(rows[0], row))
        for name in ("base", "other"):
            assert cells[f"BLEU {name}"] == f"{bucket['bleu'][name]:.2f}", (cells, bucket)
            assert cells[f"length {name}"] == f"{bucket['length'][name]:.2f}", (cells, bucket)
    with Image.open(tmp_path / "b.png") as image:
        assert image.size[0] > 400 and image.size[1] > 300


def test_the_source_and_the_texts_may_be_pipes(tmp_path):
    args = files(tmp_path)
    expected = run(args + ["--json"]).stdout
    args[2], args[4] = pipe(tmp_path / "psrc", "\n".join(SRC) + "\n"), pipe(tmp_path / "pref", "\n".join(REF) + "\n")
    assert run(args + ["--json"]).stdout == expected


def test_empty_bucket_is_reported(tmp_path):
    r = run(files(tmp_path)[:-1] + ["2,3,5", "--json"])
    data = json.loads(r.stdout)
    assert data[1]["bucket"] == "3" and data[1]["count"] == 0 and data[1]["bleu"] == {"base": None, "other": None}
    assert "-" in run(files(tmp_path)[:-1] + ["2,3,5"]).stdout


def test_errors(tmp_path):
    args = files(tmp_path)
    (tmp_path / "short").write_text("one line\n")
    r = run(args + ["--hyp", f"short={tmp_path / 'short'}"], ok=False)
    assert r.exit_code == 1 and f"{tmp_path / 'short'} has 1 lines but the source" in r.stderr
    assert "--hyp: expected NAME=FILE" in run(args + ["--hyp", "nofile"], ok=False).stderr
    assert "same name" in run(args + ["--hyp", f"base={tmp_path / 'other'}"], ok=False).stderr
    assert "--buckets" in run(args[:-1] + ["5,2"], ok=False).stderr
    r = run(args + ["--bootstrap", 100], ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --bootstrap: goes with --confidence\n"
    assert "--tokenize: unknown tokenizer 'xx'" in run(args + ["--tokenize", "xx"], ok=False).stderr
    assert "--plot: cannot tell the figure format" in run(args + ["--plot", tmp_path / "x.gif"], ok=False).stderr
    assert "no such file" in run(args + ["--ref", tmp_path / "missing"], ok=False).stderr
    assert not (tmp_path / "x.gif").exists()


def test_confidence_gives_every_bleu_and_gain_an_interval_and_each_gain_its_p_value(tmp_path):
    from nmtkit.metrics.significance import confidence_interval, paired_bootstrap, sufficient_statistics
    from nmtkit.metrics.text import sacrebleu_metric
    from tests.metrics.test_significance import BASE, OTHER, REF

    src = REF[:-5] + ["a b c d e f g h i j k l m"] * 5  # a last bucket of 5 sentences: too few to resample
    for name, lines in (("src", src), ("ref", REF), ("base", BASE), ("other", OTHER)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = ["bucket-bleu", "--src", tmp_path / "src", "--ref", tmp_path / "ref", "--hyp", f"base={tmp_path / 'base'}",
            "--hyp", f"other={tmp_path / 'other'}", "--buckets", "7,12", "--confidence", "--bootstrap", 50]
    data = json.loads(run(args + ["--json"]).stdout)
    bleu = sacrebleu_metric("bleu")
    base, other = (sufficient_statistics(bleu, h, [REF]) for h in (BASE, OTHER))
    every = data[-1]  # all sentences: the file's interval, and the paired test of the two files
    assert every["bleu_ci"]["other"] == confidence_interval(bleu, other, 50).ci
    _, ci, p = paired_bootstrap(bleu, [base], [other], 50)
    assert (every["gain_ci"]["other"], every["gain_p"]["other"]) == (ci, p) and every["gain_p"]["base"] is None
    short = data[0]  # the sentences of 1-7 words, resampled alone
    rows = [i for i, line in enumerate(src) if len(line.split()) <= 7]
    assert len(rows) >= 10 and short["bleu_ci"]["other"] == confidence_interval(bleu, other[rows], 50).ci
    assert data[2]["count"] == 5 and data[2]["bleu_ci"]["other"] is None and data[2]["gain_p"]["other"] is None
    r = run(args + ["--csv", tmp_path / "c.csv", "--plot", tmp_path / "c.png"])
    header = next(csv.reader((tmp_path / "c.csv").open()))
    assert "BLEU ± other" in header and "gain p other" in header and "gain ±" in r.stdout
    assert (tmp_path / "c.png").stat().st_size > 0


def test_the_source_is_bucketed_by_tokenize_and_bleu_computed_with_bleu_tokenize(tmp_path, monkeypatch):
    """(--tokenize splits the source into buckets; sacrebleu's BLEU tokenizer is --bleu-tokenize's, 13a by default)"""
    from sacrebleu.metrics import BLEU

    args = files(tmp_path)
    for tokenize, bleu_tokenize in ((["--tokenize", "char"], "13a"), (["--bleu-tokenize", "char"], "char")):
        data = json.loads(run(args + tokenize + ["--json"]).stdout)
        expected = BLEU(tokenize=bleu_tokenize).corpus_score(BASE, [REF]).score
        assert data[-1]["bleu"]["base"] == pytest.approx(expected, abs=1e-4)
    drawn = []
    monkeypatch.setattr("nmtkit.tools.bucket_bleu.plot_buckets", lambda result, path, title, unit: drawn.append(title))
    run(args + ["--plot", tmp_path / "b.png", "--title", "Mine"])
    assert drawn == ["Mine"]
