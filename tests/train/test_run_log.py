"""train.jsonl across kills and resumes: one record per step, the loss windows of the unkilled run."""
from __future__ import annotations

import json
import shutil

import pytest

from nmtkit.train.run_log import RunLog
from tests.conftest import TINY_MODEL, run

VARYING = ("tok_per_s", "elapsed_s", "wall_s", "seconds")  # timings differ from run to run


def records(path):
    return [{k: v for k, v in json.loads(line).items() if k not in VARYING} for line in path.read_text().splitlines()]


def test_resuming_drops_the_records_past_the_checkpoint_and_a_line_cut_short(tmp_path):
    log = tmp_path / "train.jsonl"
    log.write_text('{"type": "train", "step": 3}\n{"type": "valid", "step": 4}\n{"type": "train", "step": 6}\n'
                   '{"type": "tra')
    said = RunLog(log).start(resumed_at=4)
    assert said == (f"dropped from {log}: 1 record(s) past step 4, the step resumed from; 1 line(s) that are not JSON "
                    "(line 4: cut short by a kill, or changed)")
    assert log.read_text() == '{"type": "train", "step": 3}\n{"type": "valid", "step": 4}\n'
    assert RunLog(log).start(resumed_at=4) is None


def test_a_damaged_line_before_the_step_resumed_from_is_not_said_to_be_past_it(tmp_path):
    """(It was counted among the records "past step N, the step resumed from".)"""
    log = tmp_path / "train.jsonl"
    log.write_text('{"type": "train", "step": 1}\ngarbage{\n{"type": "train", "step": 3}\n')
    assert RunLog(log).start(resumed_at=3) == (f"dropped from {log}: 1 line(s) that are not JSON (line 2: cut short "
                                               "by a kill, or changed)")
    assert log.read_text() == '{"type": "train", "step": 1}\n{"type": "train", "step": 3}\n'


def test_a_new_run_moves_a_dead_runs_log_aside(tmp_path):
    log = tmp_path / "train.jsonl"
    log.write_text('{"type": "train", "step": 3}\n')
    assert RunLog(log).start(resumed_at=None) == f"moved the log of an earlier run that saved no last.pt to {log}.old"
    assert not log.exists() and (tmp_path / "train.jsonl.old").read_text() == '{"type": "train", "step": 3}\n'
    log.write_text("second\n")
    RunLog(log).start(resumed_at=None)
    assert (tmp_path / "train.jsonl.old1").read_text() == "second\n" and (tmp_path / "train.jsonl.old").exists()


TRANSFORMER = ["--d-model", 32, "--ffn-size", 64, "--heads", 4, "--enc-layers", 1, "--dec-layers", 1]


@pytest.mark.parametrize("model", [TINY_MODEL, ["--arch", "transformer", *TRANSFORMER],
                                   ["--arch", "bitatt-transformer", *TRANSFORMER]],
                         ids=["rnnsearch", "transformer", "bitatt-transformer"])
def test_a_killed_and_resumed_run_logs_what_the_unkilled_run_logged(corpus_dir, tmp_path, model):
    """Resuming is exact for every family: the same losses at every logged step (dropout on: the RNG state too)."""
    options = ["--data", corpus_dir, *model, "--dropout", 0.1, "--log-every", 3, "--valid-every", 4,
               "--valid-max-sentences", 4, "--batch-size", 16]
    run(["train", *options, "--save-dir", tmp_path / "whole", "--max-steps", 8])
    killed = tmp_path / "killed"
    run(["train", *options, "--save-dir", killed, "--max-steps", 4])
    shutil.copy(killed / "last.pt", tmp_path / "step4.pt")
    run(["train", *options, "--save-dir", killed, "--resume", "--max-steps", 6])  # logs steps 5 and 6 ...
    shutil.copy(tmp_path / "step4.pt", killed / "last.pt")  # ... then is killed before saving them
    with open(killed / "train.jsonl", "a") as f:
        f.write('{"type": "train", "st')  # in the middle of a line
    r = run(["train", *options, "--save-dir", killed, "--resume", "--max-steps", 8])
    assert f"dropped from {killed / 'train.jsonl'}: 2 record(s) past step 4" in r.stderr
    assert "1 line(s) that are not JSON (line 5:" in r.stderr
    whole = records(tmp_path / "whole" / "train.jsonl")
    assert [(r["type"], r["step"]) for r in whole] == [("train", 3), ("valid", 4), ("train", 6), ("valid", 8)]
    assert records(killed / "train.jsonl") == whole  # the loss window of step 6 spans the resume
