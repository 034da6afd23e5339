"""bench/decode_compiled.py end to end on the tiny model: both decoders' speeds in each order, their ratio, the
compilation's time, and whether the outputs are the same."""
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "decode_compiled.py"


def test_compiled_and_uncompiled_decoding_are_timed_in_turns_with_the_same_outputs(trained_ckpt, text_dir):
    r = subprocess.run([sys.executable, SCRIPT, "-m", trained_ckpt, "-i", text_dir / "test.en", "--lines", "10",
                        "--batch", "4", "--threads", "1", "--beam", "2", "--rounds", "1"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"compiled: warm-up \(compilation\) [\d.]+ s", lines[0]), lines[0]
    rates = [line for line in lines if line.startswith("round 1, ")]
    assert len(rates) == 4 and all(float(re.search(r"([\d.]+) sentences/s$", line).group(1)) > 0 for line in rates)
    for order in ("arrival", "by_length"):
        summary = next(line for line in lines if line.startswith(f"{order}: "))
        # (the outputs' equality is tests/search/test_compiled.py's; a near tie may round otherwise on another CPU)
        assert re.fullmatch(rf"{order}: compiled / uncompiled [\d.]+ \(rounds: [\d.]+\); outputs (identical|DIFFER)",
                            summary)
