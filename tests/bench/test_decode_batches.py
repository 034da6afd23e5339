"""bench/decode_batches.py end to end on the tiny model: every way of decoding prints its speed and what its steps
carried, continuous batching's target memory padded to no less than each row's own."""
import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "decode_batches.py"


def test_each_way_of_decoding_reports_its_speed_and_widths(trained_ckpt, text_dir):
    r = subprocess.run([sys.executable, SCRIPT, "-m", trained_ckpt, "-i", text_dir / "test.en", "--lines", "10",
                        "--batch", "4", "--threads", "1", "--beam", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 5 and lines[-1].startswith("continuous, 4 in flight:")
    for line in lines:
        found = re.search(r"([\d.]+) sentences/s; (\d+) steps of ([\d.]+) sentences, input positions ([\d.]+) "
                          r"\(real ([\d.]+)\), target memory ([\d.]+) \(own ([\d.]+)\)", line)
        assert found, line
        rate, steps, live, padded, real, memory, own = map(float, found.groups())
        assert rate > 0 and steps > 0 and 1 <= live <= 4 and padded >= real > 0 and memory >= own >= 0
