"""nmtkit train: train a registered architecture on a corpus folder.

The options are the training options plus the chosen architecture's own: ``--arch`` (from the
command line, the YAML config, or the run being resumed) is found first, then that
architecture's options are added, so ``nmtkit train --arch luong --help`` shows luong's.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Optional

import click

from nmtkit.cli.options import check_file_goes_with, check_goes_with, click_options, config_options
from nmtkit.cli.paths import Command, ReadFile
from nmtkit.config import FileValues, read_yaml, resolve
from nmtkit.errors import NmtkitError
from nmtkit.models import get_spec, model_names
from nmtkit.models.registry import MODELS, ModelSpec, owners
from nmtkit.train.options import TRAIN_OPTIONS

DEFAULTS = {o.name: o.default for o in TRAIN_OPTIONS}


def _value(args: list[str], *flags: str) -> Optional[str]:
    """The last value given to one of ``flags`` (``--flag V`` or ``--flag=V``) in raw arguments."""
    found = None
    for i, a in enumerate(args):
        for f in flags:
            if a == f and i + 1 < len(args):
                found = args[i + 1]
            elif a.startswith(f + "="):
                found = a[len(f) + 1:]
    return found


def chosen_arch(args: list[str]) -> tuple[str, bool]:
    """The architecture a ``train`` command line asks for, and whether it was asked for (not the default):
    ``--arch``, else the ``--config`` file's ``arch``, else with ``--resume`` the run's saved config."""
    arch = _value(args, "--arch")
    if arch:
        return arch, True
    config = _value(args, "-c", "--config")
    file_values = read_yaml(Path(config), {"arch"}) if config else FileValues({}, {})
    if "arch" in file_values:
        arch = file_values["arch"]
        if not isinstance(arch, str) or arch not in model_names():
            raise NmtkitError(f"{file_values.where('arch', str(config))}: 'arch' expects an architecture, got "
                              f"{arch!r}; known: {', '.join(model_names())}", exit_code=2)
        return arch, True
    save_dir = Path(str(_value(args, "--save-dir") or file_values.get("save_dir") or DEFAULTS["save_dir"]))
    if "--resume" in args and (save_dir / "last.pt").is_file():
        saved = save_dir / "config.yaml"  # (its arch alone: last.pt read only where the file lacks it)
        arch = (read_yaml(saved) if saved.is_file() else {}).get("arch") or run_config(save_dir, quiet=True).get("arch")
        if arch:
            return str(arch), True
    return DEFAULTS["arch"], False


def run_config(save_dir: Path, quiet: bool = False) -> dict:
    """The settings of the run in ``save_dir`` (which holds a last.pt): its ``config.yaml``, and for keys it lacks (a
    file lost or cut short: training's, the architecture's own) those ``last.pt`` was trained with, with a warning
    unless ``quiet``."""
    from nmtkit.checkpoint import load_checkpoint
    from nmtkit.progress import warn

    saved = save_dir / "config.yaml"
    values = read_yaml(saved) if saved.is_file() else FileValues({}, {})
    arch = MODELS.get(str(values.get("arch")))
    known = {o.name for o in TRAIN_OPTIONS} | {"arch"} | {o.name for o in (arch.options if arch else ())}
    if known <= set(values):
        return values
    trained = load_checkpoint(save_dir / "last.pt")["config"]
    taken = sorted(k for k in trained if k not in values)
    if taken and not quiet:
        what = "is missing" if not saved.is_file() else f"lacks {', '.join(taken[:4])}{' ...' if len(taken) > 4 else ''}"
        warn(f"{saved} {what}: the run's settings taken from {save_dir / 'last.pt'}")
    return FileValues({**{k: trained[k] for k in taken}, **values}, values.lines)


def _key(flag: str) -> str:
    name = flag.lstrip("-").replace("-", "_")
    return name[3:] if name.startswith("no_") and owners(name[3:]) else name


COMMAND_LINE_ONLY = ("config", "resume", "init_from", "init_optimizer", "init_lr")  #: options that no file sets


def not_an_option(names: list[str], spec: ModelSpec) -> str:
    """Why keys (or flags) are refused: options of the command line alone, another architecture's options, or
    nobody's; each reason after the names it is of, where they have more than one."""
    keys = [_key(n) for n in names]
    only_given = [f"--{k.replace('_', '-')}" for k in keys if k in COMMAND_LINE_ONLY]
    theirs = [(n, k) for n, k in zip(names, keys) if k not in COMMAND_LINE_ONLY and set(owners(k)) - {spec.name}]
    nobodys = [n for n, k in zip(names, keys) if k not in COMMAND_LINE_ONLY and not set(owners(k)) - {spec.name}]
    reasons = []
    if only_given:
        reasons.append((", ".join(only_given), "given on the command line only, not in a config file"))
    if theirs:
        others = sorted({o for _, k in theirs for o in owners(k)} - {spec.name})
        reasons.append((", ".join(n for n, _ in theirs), f"not an option of --arch {spec.name} but of "
                        f"{', '.join(others)}; see 'nmtkit train --arch {spec.name} --help'"))
    if nobodys:
        reasons.append((", ".join(nobodys), "no such option; see 'nmtkit train --help'"))
    if len(reasons) == 1 and not only_given:
        return reasons[0][1]
    return "; ".join(f"{named}: {reason}" for named, reason in reasons)


def run_settings(saved: FileValues, spec: ModelSpec) -> FileValues:
    """A run's saved config without other architectures' keys (nmtkit 0.1.0 saved every architecture's)."""
    own = {o.name for o in spec.options}
    return FileValues({k: v for k, v in saved.items() if k in own or not owners(k)}, saved.lines)


class ArchCommand(Command):
    """A click command whose options are the training options plus the chosen architecture's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.base_params = list(self.params)
        self.spec: Optional[ModelSpec] = None  # known once the arguments are parsed
        self.explicit = False

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        arch, self.explicit = chosen_arch(args)
        self.spec = get_spec(arch)
        taken = [o.name for o in self.spec.options if o.name in DEFAULTS]  # (DEFAULTS: train's own options)
        if taken:  # (a plugin's: its default would replace train's, and --help would list the flag twice)
            flag = "--" + taken[0].replace("_", "-")
            raise NmtkitError(f"--arch {arch}: the model declares {flag}, an option of train itself "
                              f"({self.spec.builder.__module__}); give the model's option another name", exit_code=2)
        self.params = self.base_params + click_options(self.spec.options)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            raise NmtkitError(f"{e.option_name}: {not_an_option([e.option_name], self.spec)}", exit_code=2) from None

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        own = {o.name for o in self.spec.options} if self.spec else set()
        records = lambda params: [r for r in (p.get_help_record(ctx) for p in params) if r]
        with formatter.section("Options"):
            formatter.write_dl(records([p for p in self.get_params(ctx) if p.name not in own]))
        if self.explicit and self.spec:
            with formatter.section(f"Options of --arch {self.spec.name}"):
                formatter.write_dl(records([p for p in self.params if p.name in own]))
        with formatter.section("Architectures (--arch NAME --help lists NAME's options)"):
            formatter.write_dl([(n, MODELS[n].description) for n in model_names()])


@click.command("train", cls=ArchCommand, context_settings={"max_content_width": 110})
@click.option("-c", "--config", "config_file", type=ReadFile(), help="YAML config; options given here override it")
@click.option("--resume", is_flag=True, help="continue the run in --save-dir from its last.pt")
@click.option("--init-from", type=ReadFile(), help="warm-start from the matching parameters of a checkpoint")
@click.option("--init-optimizer", is_flag=True, help="with --init-from: also take the optimiser state of matching parameters")
@click.option("--init-lr", is_flag=True, help="with --init-from: take the checkpoint's learning rate instead of --lr")
@config_options(TRAIN_OPTIONS)
@click.pass_context
def command(ctx, config_file, resume, init_from, init_optimizer, init_lr, **values):
    """Train a model. Every option but --config, --resume and --init-* can also be a key of the YAML --config.

    Writes best.pt (best validation), last.pt, config.yaml and train.jsonl (one JSON line per
    log and validation) to --save-dir, which is locked while it trains (a second run there is refused).
    Under torchrun, trains with one process per device.
    """
    from nmtkit.data.text import check_writable
    from nmtkit.train.run_lock import RunLock

    spec = ctx.command.spec
    options = TRAIN_OPTIONS + spec.options
    explain = lambda keys: not_an_option(keys, spec)
    file_values = read_yaml(Path(config_file), {o.name for o in options}) if config_file else FileValues({}, {})
    config = resolve(options, file_values, values, config_file or "config", explain)
    saved = Path(config["save_dir"]) / "config.yaml"
    if resume and (saved.parent / "last.pt").is_file():  # the run's own settings, unless given again here
        settings = run_settings(run_config(saved.parent), spec)
        kept = FileValues({k: v for k, v in settings.items() if k not in file_values and values.get(k) is None},
                          settings.lines)
        resolve(options, kept, {}, str(saved), explain)  # a saved value that is refused is named as the saved file's
        config = resolve(options, {**kept, **file_values}, values, config_file or str(saved), explain)
    config["arch"] = spec.name
    if not config["data"]:
        raise NmtkitError("--data: a corpus folder is required (here or in --config)", exit_code=2)
    decay = config["lr_schedule"] == "decay-on-worse"
    rules = [("warmup_steps", not decay, "--lr-schedule inverse-sqrt"),
             ("lr_decay", decay, "--lr-schedule decay-on-worse"), ("min_lr", decay, "--lr-schedule decay-on-worse"),
             ("adam_beta1", config["optimizer"] == "adam", "--optimizer adam"),
             ("adam_beta2", config["optimizer"] == "adam", "--optimizer adam")]
    if spec.uses:  # (what only some settings of the architecture, or of its corpus, read)
        from nmtkit.data.shards import Corpus

        rules = [*spec.uses(config, Corpus.open(config["data"]).meta), *rules]
    check_goes_with(*rules)
    check_file_goes_with(rules, file_values, config, {o.name: o.default for o in options}, str(config_file))
    if (init_optimizer or init_lr) and not init_from:
        raise NmtkitError("--init-optimizer and --init-lr go with --init-from", exit_code=2)
    if resume and init_from:
        raise NmtkitError("--resume and --init-from exclude each other", exit_code=2)
    check_writable(config["save_dir"], "--save-dir", inside=True)
    main_process = int(os.environ.get("RANK", "0")) == 0  # under torchrun, rank 0 holds the lock for every rank
    with RunLock(config["save_dir"]) if main_process else contextlib.nullcontext():
        _train(config, resume, init_from, init_optimizer, init_lr, config_file)


def check_new_run_folder(save_dir: Path, config_file: Optional[str], profiling: bool = False) -> None:
    """Refuse, in one line, a ``--save-dir`` for a new run (no last.pt) that holds what the run would replace or
    rotate away: another run's checkpoints (best.pt, step-N.pt), a config.yaml that ``train`` did not write (the
    ``--config`` file itself, a link, or a file without every training setting), or, when ``profiling``, the
    files ``--profile`` writes."""
    if not save_dir.is_dir():
        return
    from nmtkit.checkpoint import kept_checkpoints

    theirs = [p.name for p in (save_dir / "best.pt",) if p.exists()] + [p.name for p in kept_checkpoints(save_dir)]
    if theirs:
        raise NmtkitError(f"--save-dir {save_dir}: holds {', '.join(theirs)} of a run without last.pt to resume; "
                          "remove them or choose another folder", exit_code=2)
    saved = save_dir / "config.yaml"
    given = bool(config_file) and saved.exists() and os.path.samefile(saved, str(config_file))
    if given or saved.is_symlink() or (saved.exists() and not {o.name for o in TRAIN_OPTIONS} <= set(read_yaml(saved))):
        what = "the --config file" if given else "a link config.yaml" if saved.is_symlink() else "a config.yaml"
        raise NmtkitError(f"--save-dir {save_dir}: holds {what}, which train would replace with the run's own; keep "
                          "it in another folder or choose another --save-dir", exit_code=2)
    profiles = [name for name in ("profile.txt", "profile.json") if profiling and os.path.lexists(save_dir / name)]
    if profiles:
        raise NmtkitError(f"--save-dir {save_dir}: holds {' and '.join(profiles)}, which --profile would replace; "
                          "remove them or choose another folder", exit_code=2)


def _train(config: dict, resume: bool, init_from: Optional[str], init_optimizer: bool, init_lr: bool,
           config_file: Optional[str]) -> None:
    """Check what ``--save-dir`` holds against ``--resume`` (and ``--config``), then train."""
    from nmtkit.device import pick_device
    from nmtkit.train.distributed import init_distributed, leave, lost_peer, shutdown
    from nmtkit.train.trainer import Trainer

    if resume and not (Path(config["save_dir"]) / "last.pt").exists():
        raise NmtkitError(f"--resume: no {Path(config['save_dir']) / 'last.pt'} to resume from", exit_code=2)
    if not resume and (Path(config["save_dir"]) / "last.pt").exists():
        raise NmtkitError(f"--save-dir {config['save_dir']} already holds a run; use --resume to continue it "
                          "or choose another folder", exit_code=2)
    if not resume:
        check_new_run_folder(Path(config["save_dir"]), config_file, bool(config["profile"]))
    dist = init_distributed(pick_device(config["device"]), config["dist_timeout"])
    try:
        Trainer(config, dist, resume, init_from, init_optimizer, init_lr).train()
    except BaseException as e:
        leave(dist)
        peer = lost_peer(e, dist)
        if peer is not None:
            raise peer from None
        raise
    shutdown(dist)
