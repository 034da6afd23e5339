"""Dynamic batching: requests that arrive together are decoded together.

Requests become :class:`Job` s in a bounded queue; one worker thread takes the oldest job, then for up to
``max_wait`` seconds gathers the jobs that can share its batch (the same model and search settings, ``max_batch``
lines in all), decodes their lines as one sequence (sorted by length inside the decoder) and gives each job its own
results, in order. Jobs of other settings met meanwhile wait for the next round, in their order of arrival. With
one decoder (``workers=1``), the worker decodes each batch itself, so the models never run concurrently with
themselves: in a thread of its own (:meth:`Batcher.start`), or the caller's (:meth:`Batcher.run`; ``nmtkit serve``
decodes on the main thread, where PyTorch's CPU operations run several times faster than from a thread it started:
see :func:`nmtkit.serve.app.serve`). With ``workers=N``, ``decode`` is called from up to N threads at once (one per
worker process: :mod:`nmtkit.serve.workers`), and a batch is gathered whenever one of them is idle.

Continuous batching, where ``stream(key)`` gives a :class:`Stream` for a job's settings: the job's lines start a
running search at once, and the jobs of the same settings that arrive while it runs join it between two steps,
up to ``max_batch`` lines in the search; each job is answered as soon as its own lines are done. A job of other
settings waits until the search has drained (and the search takes no newer job meanwhile).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Callable, Hashable, Optional, Protocol, Sequence, cast

from nmtkit.search.sources import Line
from nmtkit.search.translator import LineResult

#: ``decode(key, lines)``: the results of lines decoded together under the settings that ``key`` names
Decode = Callable[[Hashable, Sequence[Line]], list[LineResult]]


class Stream(Protocol):
    """A running search that groups of lines join (:class:`nmtkit.search.continuous.ContinuousSearch`)."""

    @property
    def busy(self) -> bool: ...

    def add(self, tag: Hashable, lines: Sequence[Line]) -> None: ...

    def step(self) -> list[tuple[Hashable, list[LineResult]]]: ...


@dataclass
class Job:
    """One request's lines and its settings' ``key``; ``done`` gets its results, or the error that decoding raised.
    ``batched_with``: how many lines its batch held in all (for tests and logs)."""

    lines: list[Line]
    key: Hashable
    done: Callable[[object], None]
    batched_with: int = field(default=0, init=False)


class Full(Exception):
    """The queue holds as many jobs as it may: the request is refused (503)."""


class Dropped(Exception):
    """What a job gets that :meth:`Batcher.cancel` dropped undecoded."""


class Batcher:
    """A worker thread decoding queued jobs in batches of up to ``max_batch`` lines gathered for up to ``max_wait``
    seconds, up to ``workers`` batches at once; at most ``queue_size`` jobs wait."""

    def __init__(self, decode: Decode, max_batch: int = 32, max_wait: float = 0.005, queue_size: int = 256,
                 stream: Optional[Callable[[Hashable], Optional[Stream]]] = None, workers: int = 1):
        if workers > 1 and stream is not None:
            raise ValueError("continuous batching runs one search, in one worker")
        self.decode, self.max_batch, self.max_wait, self.stream = decode, max_batch, max_wait, stream
        self.workers = workers
        self._idle = threading.Semaphore(workers)  # decoders free to take a batch
        self.jobs: queue.Queue[Optional[Job]] = queue.Queue(queue_size)
        self.held: deque[Job] = deque()  # taken from the queue while gathering another batch: first next round
        self._aside = 0  # jobs set aside while the batch being gathered is, before they join the held ones
        self.thread: Optional[threading.Thread] = None  #: the worker's own thread, if :meth:`start` made one
        self.finished = threading.Event()  #: set when the worker has ended
        self.in_flight = 0  #: jobs submitted and not done
        self.batches = self.lines = 0  #: batches decoded so far (continuous searches: each run until drained), their lines
        self.steps = self.step_lines = 0  #: continuous searches' steps so far, and the lines in them, summed over steps
        self.decoding_s = 0.0  #: seconds spent decoding them, summed over workers (against the time up: how busy)
        self.cancelled = False  #: set by :meth:`cancel`
        self.dropped = 0  #: jobs dropped undecoded once cancelled
        self._lock = threading.Lock()

    def start(self) -> "Batcher":
        """Decode in a thread of the batcher's own."""
        self.thread = threading.Thread(target=self.run, name="nmtkit-batcher", daemon=True)
        self.thread.start()
        return self

    def run(self) -> None:
        """Decode in the calling thread until :meth:`stop`."""
        try:
            self._work()
        finally:
            self.finished.set()

    @property
    def waiting(self) -> int:
        """Jobs waiting: queued, or set aside while another batch is or was gathered."""
        return self.jobs.qsize() + len(self.held) + self._aside

    def submit(self, job: Job) -> None:
        """Queue ``job``, or raise :class:`Full` where ``queue_size`` jobs are :attr:`waiting`."""
        with self._lock:
            try:
                if self.waiting >= self.jobs.maxsize:
                    raise queue.Full
                self.jobs.put_nowait(job)
            except queue.Full:
                raise Full(f"{self.jobs.maxsize} requests are waiting") from None
            self.in_flight += 1

    def stop(self, timeout: Optional[float] = None) -> None:
        """Finish every job submitted so far, then end the worker; waits for it up to ``timeout`` seconds."""
        self.jobs.put(None)
        self.finished.wait(timeout)

    def cancel(self) -> None:
        """Decode nothing more: the batches being decoded finish, every other job gets :class:`Dropped` (counted in
        :attr:`dropped`); then :meth:`stop` ends the worker at once."""
        self.cancelled = True

    def _drop(self, given: Sequence[Optional[Job]]) -> None:
        """Give the ``given`` jobs, the held ones and those queued :class:`Dropped`."""
        jobs = list(given)
        while True:
            try:
                jobs.append(self.jobs.get_nowait())
            except queue.Empty:
                break
        jobs += self.held
        self.held.clear()
        for job in jobs:
            if job is not None:
                self._settle(job, Dropped("the server stopped before decoding it"), 0)
                self.dropped += 1

    def _next(self, timeout: Optional[float]) -> Optional[Job]:
        """The next job, held ones first; raises queue.Empty after ``timeout`` seconds (None: wait)."""
        if self.held:
            return self.held.popleft()
        return self.jobs.get(timeout=timeout) if timeout is None or timeout > 0 else self.jobs.get_nowait()

    def _work(self) -> None:
        stopping = False
        while not stopping or self.held:
            self._idle.acquire()  # (gather only for a decoder that can take the batch at once)
            first = self._next(None)  # (once stopping, only held jobs are left: they come first)
            if first is None:
                stopping = True
                self._idle.release()
                continue
            search = self.stream(first.key) if self.stream and not self.cancelled else None
            if search is not None:
                stopping = self._stream(first, search, stopping)
                continue
            batch, count = [first], len(first.lines)
            deadline = time.monotonic() + self.max_wait
            passed: tuple[list[Job], list[Job]] = ([], [])  # jobs that may not share the batch: held, queued
            while count < self.max_batch and not (stopping or self.cancelled):
                was_held = bool(self.held)
                try:
                    job = self._next(deadline - time.monotonic())
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                elif job.key == first.key and count + len(job.lines) <= self.max_batch:
                    batch.append(job)
                    count += len(job.lines)
                else:
                    passed[not was_held].append(job)
                    with self._lock:
                        self._aside += 1
            with self._lock:  # passed held jobs are older than the ones still held, passed queued ones younger
                self.held.extendleft(reversed(passed[0]))
                self.held.extend(passed[1])
                self._aside = 0
            if self.cancelled:  # (a second signal, before or while it was gathered: it is dropped with the rest)
                self._idle.release()
                self._drop(batch)
                break
            if self.workers == 1:
                self._run(batch, count)
            else:
                threading.Thread(target=self._run, args=(batch, count), name="nmtkit-batch", daemon=True).start()
        for _ in range(self.workers):  # the batches still being decoded are done
            self._idle.acquire()

    def _stream(self, first: Job, search: Stream, stopping: bool) -> bool:
        """Search ``first``'s lines and those of the jobs of its settings that arrive meanwhile, continuously, until
        the search is empty; whether the worker is to stop once the held jobs are done."""
        began = time.perf_counter()
        jobs: dict[int, Job] = {}  # by tag: the jobs in the search
        lines = 0  # their lines
        blocked = False  # a job that may not join waits: take no newer one
        job: Optional[Job] = first
        was_held = False
        while True:
            while job is not None:  # the job joins, and then any next one that may, without waiting
                if job.key != first.key or (jobs and lines + len(job.lines) > self.max_batch):
                    (self.held.appendleft if was_held else self.held.append)(job)
                    job, blocked = None, True
                    break
                try:
                    search.add(id(job), job.lines)
                except Exception as e:  # (its lines could not join: it alone gets the error)
                    self._settle(job, e, lines)
                else:
                    jobs[id(job)] = job
                    lines += len(job.lines)
                    job.batched_with = lines
                    self.lines += len(job.lines)
                job = None
                if not stopping and lines < self.max_batch:
                    job, was_held, stopping = self._poll()
            if not search.busy:
                break
            self.steps, self.step_lines = self.steps + 1, self.step_lines + lines
            try:
                done = search.step()
            except Exception as e:  # every job in the search gets the error (the log its traceback); the worker goes on
                self.decoding_s += time.perf_counter() - began
                logging.getLogger("nmtkit.serve").exception("decoding %d lines failed", lines)
                for waiting in jobs.values():
                    self._settle(waiting, e, lines)
                break
            now = time.perf_counter()  # (counted before its jobs are answered, as a batch's: /health is up to date)
            self.decoding_s, began = self.decoding_s + now - began, now
            for tag, results in done:
                finished = jobs.pop(cast(int, tag))
                lines -= len(finished.lines)
                self._settle(finished, results, finished.batched_with)
            if self.cancelled:  # (the jobs still in the search are dropped with the waiting ones)
                self._drop(list(jobs.values()))
                stopping = True
                break
            if not (blocked or stopping) and lines < self.max_batch:
                job, was_held, stopping = self._poll()
        self.batches += 1  # (the time since the last step answered jobs and looked for more: not decoding)
        self._idle.release()
        return stopping

    def _poll(self) -> tuple[Optional[Job], bool, bool]:
        """The next job if one is there (held ones first), whether it was held, and whether the worker is to stop
        (instead of a job, the end)."""
        was_held = bool(self.held)
        try:
            job = self._next(0)
        except queue.Empty:
            return None, False, False
        return job, was_held, job is None

    def _settle(self, job: Job, outcome: object, count: int) -> None:
        """Hand ``job`` its results (or an error); ``count``: the lines decoded with its own."""
        job.batched_with = count
        try:
            job.done(outcome)
        except Exception:  # (its client gone with the server's event loop, at a forced stop): the worker goes on
            logging.getLogger("nmtkit.serve").debug("a job's answer could not be handed over", exc_info=True)
        with self._lock:
            self.in_flight -= 1

    def _run(self, batch: list[Job], count: int) -> None:
        """Decode a batch's lines together and hand each job its own results (or the error); then the decoder is
        idle."""
        began = time.perf_counter()
        try:
            try:
                results = self.decode(batch[0].key, [line for job in batch for line in job.lines])
            except Exception as e:  # every job of the batch gets the error (the log its traceback); the worker goes on
                logging.getLogger("nmtkit.serve").exception("decoding a batch of %d lines failed", count)
                results = None
                error: Exception = e
            with self._lock:
                self.batches, self.lines = self.batches + 1, self.lines + count
                self.decoding_s += time.perf_counter() - began
            start = 0
            for job in batch:
                if results is None:
                    self._settle(job, error, count)
                else:
                    own = results[start:start + len(job.lines)]
                    self._settle(job, [replace(r, index=r.index - start) for r in own], count)
                    start += len(job.lines)
        finally:
            self._idle.release()
