"""nmtkit compare end to end: the table, JSON and CSV hold sacrebleu's figures; seeds; the figure; every error."""
import csv
import json

import pytest
from PIL import Image

from tests.conftest import pipe, run
from tests.metrics.test_significance import BASE, OTHER, REF, noisy


@pytest.fixture
def outputs(tmp_path):
    for name, lines in (("ref", REF), ("base", BASE), ("other", OTHER), ("good", noisy(REF, 0.05, 4)),
                        ("b2", noisy(REF, 0.3, 5)), ("g2", noisy(REF, 0.05, 6))):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_a_table_per_metric_with_intervals_p_values_and_significance_marks(outputs):
    from sacrebleu.significance import PairedTest

    from nmtkit.metrics.text import sacrebleu_metric

    d = outputs
    r = run(["compare", "-r", d / "ref", "--sys", f"base={d / 'base'}", "--sys", f"other={d / 'other'}", "--sys",
             f"good={d / 'good'}", "--metric", "bleu,ter", "--bootstrap", 200, "--trials", 300])
    assert r.stdout.startswith("bleu: nrefs:1|bs:200|ar:300|seed:12345|")
    assert "\nter (lower is better): nrefs:1|bs:200|ar:300" in r.stdout
    bleu_table = r.stdout.split("\nter ")[0]
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in bleu_table.splitlines() if line.startswith("│")}
    _, theirs = PairedTest([("base", BASE), ("other", OTHER)], {"BLEU": sacrebleu_metric("bleu")}, [REF], "bs", 200)()
    assert rows["other"][6] == f"{theirs['BLEU'][1].p_value:.4f}"
    assert rows["good"][4].endswith("*") and not rows["other"][4].endswith("*")


def test_the_reference_and_the_outputs_may_be_pipes(outputs):
    d = outputs
    args = ["--sys", f"base={d / 'base'}", "--sys", f"other={d / 'other'}", "--bootstrap", 50, "--trials", 50]
    expected = run(["compare", "-r", d / "ref", *args]).stdout
    assert run(["compare", "-r", pipe(d / "pref", "\n".join(REF) + "\n"), *args]).stdout == expected
    piped = ["--sys", f"base={pipe(d / 'pbase', (d / 'base').read_text())}", *args[2:]]
    assert run(["compare", "-r", d / "ref", *piped]).stdout == expected.replace(str(d / "base"), str(d / "pbase"))


def test_seeds_json_csv_and_plot(outputs, monkeypatch):
    d = outputs
    monkeypatch.chdir(d)
    args = ["compare", "-r", d / "ref", "--sys", f"base={d / 'base'},{d / 'b2'}", "--sys",
            f"good={d / 'good'},{d / 'g2'}", "--sys", f"self={d / 'base'},{d / 'b2'}", "--bootstrap", 100,
            "--trials", 100]
    data = json.loads(run([*args, "--json", "-", "--metric", "chrf++"]).stdout)
    chrf = data[0]
    assert chrf["metric"] == "chrf++" and "nw:2" in chrf["signature"] and chrf["higher_is_better"]
    base, good, self_ = chrf["systems"]
    assert [run_["file"] for run_ in good["runs"]] == [str(d / "good"), str(d / "g2")]
    assert good["mean"] == pytest.approx(sum(x["score"] for x in good["runs"]) / 2)
    assert good["against_first"]["significant"] and len(good["pairs"]) == 4
    assert [(p["baseline_file"], p["system_file"]) for p in good["pairs"]] == [
        (str(d / b), str(d / g)) for b in ("base", "b2") for g in ("good", "g2")]
    assert self_["against_first"]["delta"] == 0 and self_["against_first"]["p_bootstrap"] == 1.0
    assert self_["against_first"]["p_randomisation"] == 1.0 and not self_["against_first"]["significant"]
    run([*args, "--csv", d / "c.csv", "--plot", d / "c.png", "--json", d / "c.json"])
    table = list(csv.reader((d / "c.csv").open()))
    assert table[0][:3] == ["metric", "system", "files"] and [row[1] for row in table[1:]] == ["base", "good", "self"] * 2
    assert table[2][9:] == ["True", "4", "4"] and float(table[2][5]) > 0  # numbers, not the table's strings
    assert json.loads((d / "c.json").read_text())[0]["metric"] == "bleu"
    assert run([*args, "--csv", "-"]).stdout == (d / "c.csv").read_text()  # (instead of the table; no file '-')
    assert "several files a system: the tests cover the test set's sampling" in run(args).stdout  # (two a system)
    assert not (d / "-").exists()
    with Image.open(d / "c.png") as image:
        assert image.size[0] > 400


def test_errors(outputs):
    d = outputs
    two = ["--sys", f"a={d / 'base'}", "--sys", f"b={d / 'other'}"]
    (d / "short").write_text("one line\n")
    cases = [
        (["--sys", "a"], "--sys: expected NAME=FILE or NAME=FILE1,FILE2,..."),
        (["--sys", f"a={d / 'base'}"], "--sys: give at least two systems"),
        ([*two, "--sys", f"a={d / 'good'}"], "--sys: two systems have the same name"),
        ([*two, "--metric", "bleu,meteor"], "--metric: expected some of bleu, chrf, chrf++, ter"),
        ([*two, "--tokenize", "xx"], "--tokenize: unknown tokenizer 'xx'"),
        ([*two, "--tokenize", "zh", "--metric", "chrf,ter"], "--tokenize: goes with --metric bleu"),
        ([*two, "--plot", d / "x.gif"], "--plot: cannot tell the figure format"),
        ([*two, "--sys", f"c={d / 'short'}"], f"--sys c: {d / 'short'} has 1 lines but the reference"),
        ([*two, "--sys", f"c={d / 'missing'}"], "missing: no such file"),
    ]
    for extra, message in cases:
        r = run(["compare", "-r", d / "ref", *extra], ok=False)
        assert message in r.stderr and r.stderr.count("\n") == 1, (extra, r.stderr)
    r = run(["compare", "-r", d / "ref", "-r", d / "short", *two], ok=False)
    assert r.exit_code == 1 and r.stderr == f"error: -r {d / 'short'} has 1 lines but {d / 'ref'} has {len(REF)}\n"


def test_a_metric_named_twice_is_one_table_and_tokenize_goes_with_bleu_anywhere_in_the_list(outputs):
    d = outputs
    two = ["--sys", f"a={d / 'base'}", "--sys", f"b={d / 'other'}", "--bootstrap", 20, "--trials", 20]
    r = run(["compare", "-r", d / "ref", *two, "--metric", "bleu,bleu"])
    assert r.stdout.count("bleu: nrefs:1") == 1
    r = run(["compare", "-r", d / "ref", *two, "--metric", "chrf,bleu", "--tokenize", "zh"])
    assert "bleu: nrefs:1|bs:20|ar:20|seed:12345|case:mixed|eff:no|tok:zh" in r.stdout and r.stdout.startswith("chrf")
