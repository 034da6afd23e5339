"""bench/decode_batches.py end to end on tiny models: every way of decoding prints its speed and what its steps
carried, continuous batching's target memory padded to no less than each row's own; a Transformer (its input mask
of another shape) too."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run

SCRIPT = Path(__file__).parents[2] / "bench" / "decode_batches.py"


@pytest.fixture(scope="module")
def transformer_ckpt(corpus_dir, tmp_path_factory) -> Path:
    """A tiny Transformer of two updates (its outputs run to the length limit: the widths are what is tested)."""
    save = tmp_path_factory.mktemp("transformer")
    run(["train", "--data", corpus_dir, "--save-dir", save, "--arch", "transformer", "--d-model", 16, "--ffn-size", 32,
         "--heads", 2, "--enc-layers", 1, "--dec-layers", 1, "--max-steps", 2, "--valid-every", 2])
    return save / "last.pt"


@pytest.mark.parametrize("arch", ["rnnsearch", "transformer"])
def test_each_way_of_decoding_reports_its_speed_and_widths(arch, trained_ckpt, transformer_ckpt, text_dir):
    model = trained_ckpt if arch == "rnnsearch" else transformer_ckpt
    r = subprocess.run([sys.executable, SCRIPT, "-m", model, "-i", text_dir / "test.en", "--lines", "10",
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
