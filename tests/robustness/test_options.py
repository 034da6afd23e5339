"""Every option of every subcommand (and every YAML key) has a declared type and range, checked before any work:
a value beyond it is one line on stderr naming the option and what it allows, exit code 2, no traceback."""
from __future__ import annotations

import click
import pytest

from nmtkit.cli import main
from nmtkit.cli.options import Checked
from nmtkit.config import Range
from nmtkit.models import model_names
from tests.conftest import run


def parameters():
    """(command line that parses, parameter) for every parameter of every command; train once per architecture."""
    for name, command in sorted(main.commands.items()):
        for arch in model_names() if name == "train" else [None]:
            prefix = [name] + (["--arch", arch] if arch else [])
            ctx = click.Context(command, info_name=name)
            if arch:
                command.parse_args(ctx, ["--arch", arch])  # adds the architecture's options
            params = [p for p in command.get_params(ctx) if p.name != "help"]
            required = []
            for p in params:
                if p.required:
                    required += ["0"] if isinstance(p, click.Argument) else [p.opts[-1], "0"]
            for p in params:
                yield prefix + required, p


def outside(allowed: Range, kind: type) -> list[str]:
    """Values just beyond each bound of a range, and the numbers no range allows."""
    step = 1 if kind is int else 0.5
    values = ["nan", "inf"] if kind is float else ["1.5", "many"]
    if allowed.low is not None:
        values.append(str(allowed.low if allowed.low_open else allowed.low - step))
    if allowed.high is not None:
        values.append(str(allowed.high if allowed.high_open else allowed.high + step))
    return values


def inside(allowed: Range, kind: type) -> list[str]:
    return [str(kind(b)) for b, is_open in ((allowed.low, allowed.low_open), (allowed.high, allowed.high_open))
            if b is not None and not is_open]


CHECKED = [(args, p) for args, p in parameters() if isinstance(p.type, Checked) and isinstance(p.type.allows, Range)]


def test_every_number_and_device_option_declares_what_it_allows():
    unchecked = [f"{args[0]} {p.opts[-1]}" for args, p in parameters()
                 if isinstance(p.type, (click.types.IntParamType, click.types.FloatParamType))
                 or (p.name in ("device",) and not isinstance(p.type, Checked))]
    assert not unchecked
    assert len(CHECKED) > 60


@pytest.mark.parametrize("args,param", CHECKED, ids=[f"{a[0]}{a[2] if a[1:2] == ['--arch'] else ''}:{p.opts[-1]}"
                                                    for a, p in CHECKED])
def test_values_beyond_the_range_are_one_line_errors(args, param):
    flag = max(param.opts, key=len)
    for value in outside(param.type.allows, param.type.kind):
        r = run([*args, flag, value], ok=False)
        lines = r.stderr.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1, (value, r.stderr)
        assert lines[0].startswith(f"error: {flag}: expects ") and repr(value) in lines[0]
        assert str(param.type.allows) in lines[0] or param.type.kind is float and value in ("nan", "inf")
    for value in inside(param.type.allows, param.type.kind):
        main.commands[args[0]].make_context(args[0], [*args[1:], flag, value])  # parses


def test_a_device_must_be_one_torch_knows():
    r = run(["train", "--data", "x", "--device", "tpu"], ok=False)
    assert r.exit_code == 2 and r.stderr == ("error: --device: expects auto, cpu, mps, cuda or cuda:N, got 'tpu' "
                                             "(see 'nmtkit train --help')\n")
    r = run(["translate", "-m", "x.pt", "--device", "tpu"], ok=False)
    assert r.exit_code == 2 and "--device: expects auto, cpu, mps, cuda or cuda:N" in r.stderr


@pytest.mark.parametrize("yaml_line,message", [
    ("lr: .nan", "'lr' expects a number > 0, got nan"),
    ("lr: 0", "'lr' expects a number > 0, got 0"),
    ("dropout: 1.5", "'dropout' expects a number in [0, 1), got 1.5"),
    ("batch_size: 0", "'batch_size' expects an integer >= 1, got 0"),
    ("batch_size: 2.5", "'batch_size' expects an integer >= 1, got 2.5"),
    ("batch_size: null", "'batch_size' expects an integer >= 1, got None"),
    ("amp: maybe", "'amp' expects true or false, got 'maybe'"),
    ("valid_every: true", "'valid_every' expects an integer >= 1, got True"),
    ("decay_metric: 1", "'decay_metric' expects one of bleu, chrf, chrf++, ppl, got 1"),
    ("device: tpu", "'device' expects auto, cpu, mps, cuda or cuda:N, got 'tpu'"),
])
def test_yaml_values_are_checked_like_options(tmp_path, yaml_line, message):
    config = tmp_path / "run.yaml"
    config.write_text(f"data: x\n{yaml_line}\n")
    r = run(["train", "-c", config, "--save-dir", tmp_path / "run"], ok=False)
    assert r.exit_code == 2 and r.stderr == f"error: {config}:2: {message}\n"
    assert not (tmp_path / "run").exists()


def test_n_best_beyond_the_beam_is_refused_before_loading_the_model():
    r = run(["translate", "-m", "missing.pt", "--beam", 4, "--n-best", 5], ok=False)
    assert r.exit_code == 2 and r.stderr == "error: --n-best: expects at most the beam size (4), got 5\n"


def test_whole_bounds_are_written_in_full():
    r = run(["train", "--data", "x", "--seed", 2**32], ok=False)
    assert "--seed: expects an integer in [0, 4294967295], got '4294967296'" in r.stderr


def test_options_that_do_not_go_together_are_one_line_errors(corpus_dir, tmp_path):
    r = run(["train", "--data", corpus_dir, "--save-dir", tmp_path / "r", "--arch", "luong", "--tie-embeddings",
             "--emb-size", 8, "--dec-size", 16], ok=False)
    assert r.exit_code == 2 and r.stderr.splitlines()[-1].startswith("error: --arch luong: --tie-embeddings needs --emb-size")
    assert "Traceback" not in r.stderr


def test_a_refused_value_in_a_resumed_runs_config_names_that_file(corpus_dir, trained_ckpt, tmp_path):
    save = tmp_path / "run"
    save.mkdir()
    for name in ("last.pt", "best.pt"):
        (save / name).write_bytes(trained_ckpt.read_bytes())
    saved = (trained_ckpt.parent / "config.yaml").read_text()
    assert "\nsave_every: 0\n" in saved
    (save / "config.yaml").write_text(saved.replace("\nsave_every: 0\n", "\nsave_every: -1\n"))
    r = run(["train", "--save-dir", save, "--resume"], ok=False)
    line = saved.split("\n").index("save_every: 0") + 1  # (named with its line, as a --config file's values are)
    assert r.exit_code == 2 and r.stderr == (f"error: {save / 'config.yaml'}:{line}: 'save_every' expects an integer "
                                             ">= 0, got -1\n")
    run(["train", "--save-dir", save, "--resume", "--save-every", 0, "--max-steps", 121])  # given again: fine


def test_demo_corpus_refuses_more_pairs_than_it_can_draw(tmp_path):
    r = run(["demo-corpus", tmp_path / "d", "--train", 500_000, "--valid", 10], ok=False)
    assert r.exit_code == 2 and "at most 500,000 pairs together" in r.stderr and not (tmp_path / "d").exists()
