"""Decoding in worker processes (``serve --workers N``): each process loads the models and decodes one batch at a
time on its main thread, with ``--threads`` threads of its own; the batcher hands each batch to an idle one.

On a CPU, a search step of the small batches a server decodes is mostly fixed cost, which threads of one process
do not share; several processes of a few threads each decode several batches at once instead (what CTranslate2
calls ``inter_threads`` and Marian's CPU workers do). On 2 cores, two of one thread each served as many sentences a
second as one of two threads, with a quarter less CPU (bench/README.md, "Worker processes"). A worker that dies is
started again; the batch it was decoding gets an error (a worker found dead when a batch is handed to it is
started again first, and decodes the batch).
"""
from __future__ import annotations

import logging
import multiprocessing
import queue
import signal
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Hashable, Mapping, Sequence, cast

from nmtkit.decoding import Decoder, DecodeSettings
from nmtkit.errors import NmtkitError
from nmtkit.search.sources import Line
from nmtkit.search.translator import LineResult


def decode_batch(decoders: Mapping[str, Decoder], key: Hashable, lines: Sequence[Line]) -> list[LineResult]:
    """The results of ``lines`` decoded together under the settings ``key`` names: the model's name, beam size,
    n-best, whether with alignments (and whether the lines are guided, which decoding reads from the lines)."""
    name, beam, n_best, alignments, _ = cast(tuple, key)
    decoder = decoders[name]
    options = replace(decoder.options, beam_size=beam, n_best=n_best)
    return list(decoder.translate(lines, chunk_size=max(len(lines), 1), options=options, alignments=alignments))


def _work(settings: dict[str, DecodeSettings], conn: Connection) -> None:
    """A worker process: load the models, say so, then decode each batch received until told to stop (None) or the
    server's end of the pipe closes. Signals are the server's to handle: it stops its workers once the requests in
    flight are answered."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        decoders = {name: Decoder(s, name=f"batch of {name}") for name, s in settings.items()}
        for decoder in decoders.values():
            decoder.warm_up()  # (with --compile: before the worker takes batches)
    except Exception as e:
        conn.send(("failed", str(e)))
        return
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        outcome: tuple[str, object]
        try:
            outcome = ("ok", decode_batch(decoders, *message))
        except Exception as e:  # (its traceback in the worker's log; the server gets the one line)
            logging.getLogger("nmtkit.serve").exception("decoding a batch of %d lines failed", len(message[1]))
            outcome = ("error", f"{type(e).__name__}: {e}")
        conn.send(outcome)


@dataclass
class Worker:
    """One worker process and the server's end of its pipe."""

    number: int
    process: multiprocessing.process.BaseProcess
    conn: Connection


class WorkerPool:
    """``count`` worker processes, each decoding with its own copy of the models of ``settings`` (by name);
    :meth:`decode` is called from up to ``count`` threads at once, each batch going to an idle worker."""

    def __init__(self, settings: dict[str, DecodeSettings], count: int):
        self.settings, self.size = settings, count
        self._context = multiprocessing.get_context("spawn")  # (forking a process that runs OpenMP threads may hang)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self.workers: list[Worker] = []
        try:
            for worker in [self._start(k) for k in range(count)]:  # (they load their models at the same time)
                self._ready(worker)
                self._idle.put(worker)
        except BaseException:
            self.close(0)
            raise

    def _start(self, number: int) -> Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_work, args=(self.settings, theirs), name=f"nmtkit-worker-{number}",
                                        daemon=True)
        process.start()
        theirs.close()
        worker = Worker(number, process, ours)
        self.workers.append(worker)  # (from the start, so that close() ends it even while it loads)
        return worker

    def _ready(self, worker: Worker) -> None:
        """Wait for ``worker`` to have loaded its models; a one-line error where it could not."""
        try:
            status, message = worker.conn.recv()
        except EOFError:
            worker.process.join(5)
            status, message = "failed", f"it exited with code {worker.process.exitcode}"
        if status != "ready":
            raise NmtkitError(f"--workers: worker {worker.number} could not load the models: {message}")

    def decode(self, key: Hashable, lines: Sequence[Line]) -> list[LineResult]:
        """``lines`` decoded by an idle worker (see :func:`decode_batch`); a RuntimeError with the worker's one line
        where decoding failed, or where the worker died (it is started again)."""
        worker = self._idle.get()
        try:
            if not worker.process.is_alive():  # it died while idle: a new one takes the batch
                code = worker.process.exitcode
                worker = self._restart(worker)
                logging.getLogger("nmtkit.serve").warning("worker %d ended (exit code %s) while idle; started again",
                                                          worker.number, code)
            worker.conn.send((key, list(lines)))
            status, outcome = worker.conn.recv()
        except (EOFError, OSError):
            worker.process.join(5)
            code = worker.process.exitcode
            worker = self._restart(worker)
            raise RuntimeError(f"worker {worker.number} ended (exit code {code}) while decoding; started again") \
                from None
        finally:
            self._idle.put(worker)
        if status != "ok":
            raise RuntimeError(outcome)
        return outcome

    def _restart(self, dead: Worker) -> Worker:
        self.workers.remove(dead)
        dead.conn.close()
        worker = self._start(dead.number)
        self._ready(worker)
        return worker

    def close(self, timeout: float = 30) -> None:
        """Stop every worker: each finishes the batch it decodes, then ends (or is ended after ``timeout`` s)."""
        for worker in self.workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self.workers:
            worker.process.join(timeout)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self.workers = []
