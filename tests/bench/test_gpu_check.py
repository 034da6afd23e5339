"""bench/gpu_check.sh runs end to end (on the CPU, small models): every architecture asked for trains and decodes,
the Transformer's speed table, its share of the matrix rate and decoding speed, its model served under load, one
summary file and one tarball;
a failing step is FAILED in the summary and the exit status; the check ends at its time limit."""
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from tests.recipes.mirror import run_recipe

SCRIPT = Path(__file__).parents[2] / "bench" / "gpu_check.sh"


def test_the_gpu_check_summarises_every_step_in_one_file(tmp_path):
    r = run_recipe(SCRIPT, tmp_path / "check", ARCHS="rnnsearch nosuch show-attend-tell",
                   BASE_ARCHS="transformer transformer@512", DEVICE="cpu", TINY="1", STEPS="2", LINES="3",
                   BASE_STEPS="4", BASE_BATCH="128", PAIRS="300", LATER_BASE=" ", CPU_LINES="100", PROFILE="3:4",
                   SERVE_MODEL="base", SERVE_LINES="6", SERVE_CLIENTS="1,4")
    assert r.returncode == 1 and "error: a step failed" in r.stderr.splitlines()[-1], r.stderr
    summary = (tmp_path / "check" / "summary.txt").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in summary.splitlines() if line.startswith("| ")}
    for arch in ("rnnsearch", "show-attend-tell"):  # trained 2 updates, decoded the 3 test lines
        assert rows[arch].startswith(f"| {arch} | 2 | ") and "| 3 lines, " in rows[arch], summary
    assert "FAILED" in rows["nosuch"] and "1 architecture(s) failed" in summary
    assert "## transformer: tok/s per window of 4 updates" in summary and "| 4 | 1 | " in summary
    assert "MFLOP per target token" in summary and "TFLOP/s (the share's base" in summary and "% |" in rows["4"]
    assert "train --profile (its window runs slower): updates 3-4 profiled on cpu: per update " in summary
    for mode in ("greedy", "beam5"):  # the test set on DEVICE, and a sample of it (CPU_LINES) on the CPU
        assert re.search(rf"test decoding, {mode}: 500 lines, [\d,.]+ lines/s, [\d.]+ words a line\n", summary)
        assert re.search(rf"test decoding on the CPU \({os.cpu_count()} cores\), a sample, {mode}: 100 lines, "
                         r"[\d,.]+ lines/s, [\d.]+ words a line\n", summary)
    large = summary[summary.index("## transformer@512: tok/s per window of 4 updates"):]  # step 3, not decoded
    assert "| 4 | " in large and "MFLOP per target token" in large and "test decoding" not in large
    assert "train --profile (its window runs slower): updates 3-4 profiled" in large
    assert "batch_size: 512\n" in (tmp_path / "check" / "base" / "transformer@512" / "config.yaml").read_text()
    for mode in ("batches", "continuous"):  # step 3: the base model served under load, each client count a row
        for clients in (1, 4):
            assert re.search(rf"\| {mode} \| {clients} \| [\d,.]+ \| [\d.]+ \| [\d,.]+ \| [\d,.]+ \| 6 \| 0 \| \d+ \| 0 \| 0 \| "
                             r"[\d.]+ \|\n", summary), summary
        assert re.search(rf"\n{mode}: 6 lines, beam 5, device cpu; translate \(batch 32\) [\d,.]+ sentences/s\n", summary)
    order = [line.split("\t")[0] for line in (tmp_path / "check" / "logs" / "steps.tsv").read_text().splitlines()]
    assert order.index("transformer.base.train.log") < order.index("rnnsearch.train.log") < \
        order.index("transformer@512.base.train.log")  # (BASE_ARCHS' first run, every architecture, the others)
    with tarfile.open(tmp_path / "check" / "logs.tar.gz") as logs:
        names = logs.getnames()
    assert "logs/rnnsearch.train.log" in names and "logs/transformer.beam5.log" in names
    assert "logs/serve.continuous.txt" in names


def test_the_gpu_check_ends_at_its_time_limit_without_an_installed_nmtkit(tmp_path):
    # no `nmtkit` on the PATH (a bare GPU machine with the checkout on PYTHONPATH): PYTHON -m nmtkit; a training far
    # longer than TIME_LIMIT is stopped at it, and what comes after is not run: all of it FAILED in the summary (the
    # steps before the training take 2-3 s of the 15)
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "nmtkit").exists())
    root = str(Path(__file__).parents[2])
    r = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "check")], capture_output=True, text=True,
                       env={**os.environ, "PATH": path, "PYTHON": sys.executable, "PYTHONPATH": root,
                            "DEVICE": "cpu", "TINY": "1", "PAIRS": "300", "BASE_ARCHS": "transformer",
                            "ARCHS": "rnnsearch", "BASE_STEPS": "100000", "BASE_BATCH": "128", "TIME_LIMIT": "15",
                            "LATER_BASE": " "})
    assert r.returncode == 1 and "error: a step failed" in r.stderr.splitlines()[-1], r.stderr
    logs = tmp_path / "check" / "logs"
    assert (logs / "transformer.base.train.log").read_text().endswith("stopped: TIME_LIMIT reached\n")
    assert (logs / "rnnsearch.train.log").read_text() == "not run: TIME_LIMIT reached\n"
    summary = (tmp_path / "check" / "summary.txt").read_text()
    assert re.search(r"\| transformer.base.train.log \| [\d.]+ \| FAILED: stopped at TIME_LIMIT \(exit 124\) \|", summary)
    assert "| text.preprocess.log | " in summary and "| rnnsearch | FAILED |" in summary
    assert "| rnnsearch.train.log | - | FAILED: not run (TIME_LIMIT reached) |" in summary


def test_a_command_stopped_failed_or_not_run_fails_the_check(tmp_path):
    """Whatever else the summary holds: a base run's matrix rate that failed to be measured, say (the check asked
    for no architecture, so no architecture's row fails it)."""
    (tmp_path / "logs").mkdir(parents=True)
    (tmp_path / "base" / "transformer").mkdir(parents=True)
    (tmp_path / "base" / "transformer" / "train.jsonl").write_text(
        '{"type": "train", "step": 4, "epoch": 1, "tok_per_s": 1000.0}\n')
    (tmp_path / "logs" / "transformer.base.train.log").write_text("stopped: 4 updates done\n")
    (tmp_path / "logs" / "transformer.rate.log").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    for rows, failure in ((["transformer.base.train.log\t9.0\t0", "transformer.rate.log\t2.0\t1"],
                           "| transformer.rate.log | 2.0 | FAILED: exit 1 |"),
                          (["transformer.base.train.log\t9.0\t0", "numbers.log\t-\tnot run"],
                           "| numbers.log | - | FAILED: not run (TIME_LIMIT reached) |")):
        (tmp_path / "logs" / "steps.tsv").write_text("\n".join(rows) + "\n")
        r = subprocess.run([sys.executable, str(SCRIPT.with_suffix(".py")), "summary", str(tmp_path)],
                           capture_output=True, text=True, env={**os.environ, "ARCHS": " "})
        summary = (tmp_path / "summary.txt").read_text()
        assert r.returncode == 1 and failure in summary, summary
        assert "share of the matrix rate: FAILED: RuntimeError: boom" in summary and "none asked for" in summary
