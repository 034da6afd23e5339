"""bench/gpu_check.sh runs end to end (on the CPU, small models): every architecture asked for trains and decodes,
the Transformer's speed table, its share of the matrix rate and decoding speed, one summary file and one tarball;
a failing step is FAILED in the summary and the exit status."""
import tarfile
from pathlib import Path

from tests.recipes.mirror import run_recipe

SCRIPT = Path(__file__).parents[2] / "bench" / "gpu_check.sh"


def test_the_gpu_check_summarises_every_step_in_one_file(tmp_path):
    r = run_recipe(SCRIPT, tmp_path / "check", ARCHS="rnnsearch nosuch show-attend-tell", BASE_ARCHS="transformer",
                   DEVICE="cpu", TINY="1", STEPS="2", LINES="3", BASE_STEPS="4", BASE_BATCH="128", PAIRS="300")
    assert r.returncode == 1 and "error: a step failed" in r.stderr.splitlines()[-1], r.stderr
    summary = (tmp_path / "check" / "summary.txt").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in summary.splitlines() if line.startswith("| ")}
    for arch in ("rnnsearch", "show-attend-tell"):  # trained 2 updates, decoded the 3 test lines
        assert rows[arch].startswith(f"| {arch} | 2 | ") and "| 3 lines, " in rows[arch], summary
    assert "FAILED" in rows["nosuch"] and "1 architecture(s) failed" in summary
    assert "## transformer: tok/s per window of 4 updates" in summary and "| 4 | 1 | " in summary
    assert "MFLOP per target token" in summary and "% |" in rows["4"]
    for mode in ("greedy", "beam5"):
        assert f"test decoding, {mode}: 500 lines, " in summary
    with tarfile.open(tmp_path / "check" / "logs.tar.gz") as logs:
        names = logs.getnames()
    assert "logs/rnnsearch.train.log" in names and "logs/transformer.beam5.log" in names
