"""nmtkit serve: translation over HTTP, requests arriving together decoded together."""
from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from nmtkit.cli.decoding import COMPILE, DEVICE_OPTION, PRECISION
from nmtkit.cli.options import Checked, setting
from nmtkit.cli.paths import Command
from nmtkit.config import POSITIVE, Range
from nmtkit.errors import NmtkitError

if TYPE_CHECKING:
    from nmtkit.decoding import DecodeSettings, SourceMaker
    from nmtkit.inference import LoadedModel
    from nmtkit.search.sources import StreamSources

NAME = re.compile(r"[A-Za-z0-9_.-]+")


def named_models(specs: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``-m [NAME=]CHECKPOINT[,CHECKPOINT...]`` by name: an ensemble where several checkpoints are given; the
    name defaults to the checkpoint's folder (``runs/de/best.pt``: ``de``). Two models of one name are an error."""
    models: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        name, _, paths = spec.partition("=")
        if not paths or not NAME.fullmatch(name) or Path(spec).is_file():
            name, paths = "", spec
        checkpoints = tuple(p for p in paths.split(",") if p) if not Path(paths).is_file() else (paths,)
        if not checkpoints:
            raise NmtkitError(f"-m {spec}: give a checkpoint, e.g. -m de=runs/de/best.pt", exit_code=2)
        name = name or Path(checkpoints[0]).resolve().parent.name or "model"
        if name in models:
            raise NmtkitError(f"-m {spec}: a second model named {name!r}; name them, e.g. -m NAME=CHECKPOINT",
                              exit_code=2)
        models[name] = checkpoints
    return models


def text_inputs(settings: "DecodeSettings", name: str) -> "SourceMaker":
    """The sources of a served model's inputs, all text (see :func:`~nmtkit.decoding.text_sources`): a model that
    reads images is a one-line error naming it, since a request would name image files on the server's disk."""
    from nmtkit.decoding import text_sources
    from nmtkit.search.sources import feature_inputs

    make = text_sources(settings, f"batch of {name}")

    def made(loaded: "LoadedModel", path: str) -> "StreamSources":
        images = feature_inputs(loaded)
        if images:
            raise NmtkitError(f"-m {name}: {path} is a {loaded.config['arch']} model reading {', '.join(images)} "
                              f"(inputs: {', '.join(loaded.model.inputs)}); serve takes text alone, since a request "
                              "would name files on the server's disk: use 'nmtkit translate' or 'nmtkit caption'",
                              exit_code=2)
        return make(loaded, path)
    return made


@click.command("serve", cls=Command)
@click.option("-m", "--model", "specs", required=True, multiple=True, metavar="[NAME=]CHECKPOINT[,CHECKPOINT...]",
              help="a model to serve (several: repeat -m); NAME [default: the checkpoint's folder] is what requests "
                   "ask for; several checkpoints, comma-separated: an ensemble; the first -m is the default")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (0.0.0.0: every one)")
@click.option("--port", type=Checked(int, Range(0, 65535)), default=8080, show_default=True,
              help="port to listen on (0: any free one, printed)")
@click.option("-b", "--beam", type=setting("beam"), default=5, show_default=True,
              help="beam size, unless a request gives one")
@click.option("--length-penalty", type=setting("length_penalty"), default=1.0, show_default=True,
              help="rank finished hypotheses by log-prob / length^alpha")
@click.option("--max-len-a", type=setting("max_len_a"), default=1.5, show_default=True, help="output length limit a·|x| + b: a")
@click.option("--max-len-b", type=setting("max_len_b"), default=10, show_default=True, help="output length limit a·|x| + b: b")
@click.option("--max-input-len", type=setting("max_input_len"), default=250, show_default=True,
              help="truncate longer inputs (tokens), with a warning in the server's log")
@click.option("--max-batch", type=setting("batch_size"), default=32, show_default=True,
              help="the most lines decoded together: requests arriving together share a batch up to this")
@click.option("--max-wait-ms", type=Checked(float, Range(0, 10_000)), default=5.0, show_default=True,
              help="how long a request waits for others to share its batch")
@click.option("--continuous/--no-continuous", default=False, show_default=True,
              help="continuous batching: requests join a running beam search between its steps (not ensembles, "
                   "greedy, alignments, prefixes or constraints; docs/serve.md)")
@click.option("--queue-size", type=Checked(int, POSITIVE), default=256, show_default=True,
              help="requests waiting at most; more are refused with 503")
@click.option("--max-lines", type=Checked(int, POSITIVE), default=256, show_default=True,
              help="lines per request at most (more: 413)")
@click.option("--max-chars", type=Checked(int, POSITIVE), default=100_000, show_default=True,
              help="characters per request at most, in its lines, prefixes and constraints (more: 413)")
@click.option("--max-constraints", type=Checked(int, POSITIVE), default=32, show_default=True,
              help="constraint phrases per line at most (more: 413)")
@click.option("--read-timeout", type=Checked(float, Range(0.1, 3600)), default=30.0, show_default=True,
              help="seconds a request's body may take to arrive whole after its headers (later: 408)")
@DEVICE_OPTION
@PRECISION
@click.option("--threads", type=setting("threads"), default=0, show_default=True,
              help="CPU threads of each decoding process (0: PyTorch's default, shared among the --workers)")
@COMPILE
@click.option("--workers", type=Checked(int, Range(1, 64)), default=1, show_default=True,
              help="decoding processes, each with its own copy of the models, decoding a batch each at once "
                   "(docs/serve.md: when it pays)")
def command(specs, host, port, beam, length_penalty, max_len_a, max_len_b, max_input_len, max_batch, max_wait_ms,
            continuous, queue_size, max_lines, max_chars, max_constraints, read_timeout, device, precision, threads,
            compile, workers):
    """Serve models over HTTP: POST /translate, GET /health, GET /models, a page to try them at /, the API's
    documentation at /docs.

    Requests that arrive together are decoded together (--max-batch, --max-wait-ms), or, with
    --continuous, join a beam search already running; each response holds only its own lines, in
    order. Ctrl-C or SIGTERM stops taking requests and finishes those
    in flight. See docs/serve.md.
    """
    try:
        from nmtkit.serve.app import Limits, check_address, make_app, serve
    except ImportError as e:
        raise NmtkitError(f"serve needs FastAPI and uvicorn: pip install 'nmtkit[serve]' ({e})", exit_code=2) from None
    import torch

    from nmtkit.decoding import Decoder, DecodeSettings
    from nmtkit.progress import log
    from nmtkit.serve.workers import WorkerPool

    if continuous and workers > 1:
        raise NmtkitError("--continuous: one search runs in one process; give --workers 1", exit_code=2)
    if workers > 1 and not threads:
        threads = max(1, torch.get_num_threads() // workers)
    models = named_models(specs)
    check_address(host, port)
    settings, decoders = {}, {}
    for name, checkpoints in models.items():
        settings[name] = DecodeSettings(models=checkpoints, beam=beam, length_penalty=length_penalty,
                                        max_len_a=max_len_a, max_len_b=max_len_b, max_input_len=max_input_len,
                                        batch_size=max_batch, device=device, precision=precision, threads=threads,
                                        prefix=True, constraints=True, compile=compile)
        reader = settings[name] if workers == 1 else replace(settings[name], device="cpu", compile=False)  # (workers decode)
        decoders[name] = Decoder(reader, text_inputs(reader, name), f"batch of {name}")  # (warnings: a line of its batch)
        log(f"{name}: {decoders[name].loaded.config['arch']} from {', '.join(checkpoints)}")
        if compile and workers == 1:
            log(f"{name}: compiling its decoding step (torch.compile) before serving")
            started = time.perf_counter()
            if decoders[name].warm_up(continuous):
                log(f"{name}: decoding step compiled in {time.perf_counter() - started:.1f} s")
    pool = WorkerPool(settings, workers) if workers > 1 else None
    if pool:
        log(f"{workers} decoding processes of {threads} thread(s) each"
            f"{', each compiling its decoding step (torch.compile) before it takes batches' if compile else ''}")
    try:
        limits = Limits(max_lines, max_chars, max_constraints, queue_size, max_batch, max_wait_ms, continuous,
                        read_timeout)
        serve(make_app(decoders, limits, worker_thread=False, pool=pool), host, port)
    finally:
        if pool:
            pool.close()
