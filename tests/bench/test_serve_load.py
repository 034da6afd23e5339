"""bench/serve_load.py end to end on the tiny model: every phase answers every sentence, none mixed up, and the
figures land in its JSON."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "bench" / "serve_load.py"


@pytest.mark.parametrize("batching", [[], ["--continuous"], ["--workers", "2"]])
def test_the_load_test_answers_every_sentence_of_every_phase(trained_ckpt, text_dir, tmp_path, batching):
    r = subprocess.run([sys.executable, SCRIPT, "-m", trained_ckpt, "-i", text_dir / "test.en", "--lines", "12",
                        "--clients", "1,4", "--threads", "2", "--beam", "2", "--json", tmp_path / "load.json",
                        *batching], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    figures = json.loads((tmp_path / "load.json").read_text())
    assert figures["sentences"] == 12 and [p["clients"] for p in figures["phases"]] == [1, 4]
    for p in figures["phases"]:
        assert (p["answered"], p["mixed_up"], p["differs"], p["errors"], p["unsent"]) == (12, 0, 0, 0, 0)
        assert p["sentences_per_s"] > 0 and 0 < p["p50_ms"] <= p["p99_ms"] and p["vs_translate"] > 0
        workers = 2 if "--workers" in batching else 1
        assert 1 <= p["mean_batch"] <= (12 if "--continuous" in batching else p["clients"])
        assert 0 < p["decoding"] <= workers and 0 < p["server_main_cpu_s"] <= p["server_cpu_s"]
        assert (p["server_main_cpu_s"] < p["server_cpu_s"]) == (workers > 1)  # (the workers' CPU counted too)
    assert "translate (batch 32)" in r.stdout and "vs translate" in r.stdout
