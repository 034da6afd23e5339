"""``train --profile A:B`` profiles exactly those updates and writes what they spent their time on; bad ranges are
refused in one line."""
import json

import pytest

from tests.conftest import TINY_MODEL, run


def _train(corpus_dir, save, *extra, ok=True):
    return run(["train", "--data", corpus_dir, "--save-dir", save, *TINY_MODEL, "--max-steps", 6, "--valid-every", 6,
                "--valid-max-sentences", 5, "--batch-size", 16, "--log-every", 3, *extra], ok=ok)


def test_the_profiled_updates_are_written_as_a_table_and_a_trace(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run", "--profile", "2:4")
    text = (tmp_path / "run" / "profile.txt").read_text()
    assert text.startswith("3 updates profiled on cpu: per update "), text
    assert "kernel launches" in text and "aten::" in text  # the operations' table
    trace = json.loads((tmp_path / "run" / "profile.json").read_text())
    steps = {e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("aten::")}
    assert "aten::mm" in steps or "aten::addmm" in steps


def test_a_profile_past_the_last_update_is_written_when_training_stops(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run", "--profile", "5:100")
    assert (tmp_path / "run" / "profile.txt").read_text().startswith("2 updates profiled on cpu")


def test_no_profile_unless_asked(corpus_dir, tmp_path):
    _train(corpus_dir, tmp_path / "run")
    assert not (tmp_path / "run" / "profile.txt").exists()


@pytest.mark.parametrize("value, says", [("4:2", "--profile 4:2: the last update comes before the first"),
                                         ("2-4", "A:B, the first and the last update")])
def test_a_bad_range_is_refused_in_one_line(corpus_dir, tmp_path, value, says):
    r = _train(corpus_dir, tmp_path / "run", "--profile", value, ok=False)
    assert r.exit_code == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "run" / "profile.txt").exists()
