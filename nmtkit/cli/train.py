"""nmtkit train: train a registered architecture on a corpus folder."""
from __future__ import annotations

from pathlib import Path

import click

from nmtkit.cli.options import config_options
from nmtkit.config import read_yaml, resolve
from nmtkit.errors import NmtkitError
from nmtkit.models import model_names, model_options
from nmtkit.train.options import TRAIN_OPTIONS

ALL_OPTIONS = TRAIN_OPTIONS + model_options()


@click.command("train", context_settings={"max_content_width": 110})
@click.option("-c", "--config", "config_file", type=click.Path(dir_okay=False), help="YAML config; options given here override it")
@click.option("--resume", is_flag=True, help="continue the run in --save-dir from its last.pt")
@click.option("--init-from", type=click.Path(dir_okay=False), help="warm-start from the matching parameters of a checkpoint")
@click.option("--init-optimizer", is_flag=True, help="with --init-from: also take the optimiser state of matching parameters")
@click.option("--init-lr", is_flag=True, help="with --init-from: take the checkpoint's learning rate instead of --lr")
@click.option("--freeze-embeddings", is_flag=True, help="do not update the word embeddings")
@config_options(ALL_OPTIONS)
def command(config_file, resume, init_from, init_optimizer, init_lr, freeze_embeddings, **values):
    """Train a model. Every option can also be a key of the YAML --config.

    Writes best.pt (best validation), last.pt, config.yaml and train.jsonl (one JSON line per
    log and validation) to --save-dir. Under torchrun, trains with one process per device.
    """
    from nmtkit.train.distributed import init_distributed, shutdown
    from nmtkit.train.trainer import Trainer, pick_device

    file_values = read_yaml(Path(config_file)) if config_file else {}
    config = resolve(ALL_OPTIONS, file_values, values, config_file or "config")
    saved = Path(config["save_dir"]) / "config.yaml"
    if resume and saved.exists():  # the run's own settings, unless given again here
        config = resolve(ALL_OPTIONS, {**read_yaml(saved), **file_values}, values, config_file or str(saved))
    if not config["data"]:
        raise NmtkitError("--data: a corpus folder is required (here or in --config)", exit_code=2)
    if config["arch"] not in model_names():
        raise NmtkitError(f"--arch: unknown architecture {config['arch']!r}; known: {', '.join(model_names())}", exit_code=2)
    if (init_optimizer or init_lr) and not init_from:
        raise NmtkitError("--init-optimizer and --init-lr go with --init-from", exit_code=2)
    if resume and init_from:
        raise NmtkitError("--resume and --init-from exclude each other", exit_code=2)
    if resume and not (Path(config["save_dir"]) / "last.pt").exists():
        raise NmtkitError(f"--resume: no {Path(config['save_dir']) / 'last.pt'} to resume from", exit_code=2)
    if not resume and (Path(config["save_dir"]) / "last.pt").exists():
        raise NmtkitError(f"--save-dir {config['save_dir']} already holds a run; use --resume to continue it "
                          "or choose another folder", exit_code=2)
    dist = init_distributed(pick_device(config["device"]), config["dist_timeout"])
    try:
        Trainer(config, dist, resume, init_from, init_optimizer, init_lr, freeze_embeddings).train()
    finally:
        shutdown(dist)
