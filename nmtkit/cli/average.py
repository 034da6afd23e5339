"""nmtkit average: average the parameters of several checkpoints into one."""
from __future__ import annotations

import os

import click

from nmtkit.cli.options import Checked
from nmtkit.cli.paths import Command, ReadFile, WriteFile, check_outputs
from nmtkit.config import POSITIVE


@click.command("average", cls=Command)
@click.argument("checkpoints", nargs=-1, type=ReadFile())
@click.option("--run", "run_dir", type=click.Path(exists=True, file_okay=False),
              help="a run folder: average the step checkpoints it kept (train --keep-checkpoints)")
@click.option("--last", type=Checked(int, POSITIVE), help="with --run: only the last N of them")
@click.option("-o", "--output", required=True, type=WriteFile(stdout=False),
              help="the averaged checkpoint, written atomically")
@click.option("--force", is_flag=True, help="replace an existing file other than an earlier average (e.g. best.pt)")
def command(checkpoints, run_dir, last, output, force):
    """Average the parameters of CHECKPOINTS (or of the last N a run kept) into one checkpoint for decoding.

    \b
    nmtkit train ... --keep-checkpoints 5
    nmtkit average --run run/ --last 5 -o run/averaged.pt
    nmtkit average run/step-8000.pt run/step-9000.pt run/step-10000.pt -o averaged.pt
    """
    from nmtkit.checkpoint import kept_checkpoints, save_checkpoint
    from nmtkit.errors import NmtkitError
    from nmtkit.progress import log, warn
    from nmtkit.tools.average import average_checkpoints, is_average

    if bool(checkpoints) == bool(run_dir) or (last and not run_dir):
        raise NmtkitError("average: give CHECKPOINTS, or --run DIR [--last N]", exit_code=2)
    paths = list(checkpoints)
    if run_dir:
        paths = kept_checkpoints(run_dir)[-(last or 0):]
        if not paths:
            raise NmtkitError(f"--run {run_dir}: no step-STEP.pt checkpoints (train with --keep-checkpoints N)",
                              exit_code=2)
        if last and len(paths) < last:  # (an average of fewer models than asked: said, not silent)
            warn(f"--last {last}: the run in {run_dir} kept {len(paths)} step checkpoint(s); averaging those")
        check_outputs([("--output", output)], [(f"--run {run_dir} ({p.name})", str(p)) for p in paths])
    seen: dict[str, str] = {}
    for path in map(str, paths):  # (the same file twice would weigh its model double)
        key = os.path.realpath(path)
        if key in seen:
            raise NmtkitError(f"CHECKPOINTS: {path} is {seen[key]} again; give each checkpoint once", exit_code=2)
        seen[key] = path
    if not force and os.path.lexists(output) and not is_average(output):
        raise NmtkitError(f"-o {output}: holds a file that is not an earlier average (a trained checkpoint, or "
                          "another file); give --force to replace it, or write the average to another file",
                          exit_code=2)
    save_checkpoint(output, average_checkpoints(paths))
    log(f"averaged {len(paths)} checkpoints ({', '.join(str(p) for p in paths)}) into {output}")
