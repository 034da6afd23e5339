"""Batches made ahead in a background thread (``train`` on GPUs): while the device computes an update, the next
batches are read from the shards, padded and pinned in page-locked memory (so that their copies to the device
need not wait), taking batch making off the critical path."""
from __future__ import annotations

import queue
import threading
from typing import Iterator, Optional

from nmtkit.data.batching import Batch

_END = object()  #: what the worker puts when the batches are done


class Prefetched:
    """The batches of ``batches`` in order, up to ``ahead`` of them made in advance by a background thread (each
    pinned, with ``pin``); an error making one is raised where that batch would have come. :meth:`close` stops the
    worker (the caller leaving the loop early)."""

    def __init__(self, batches: Iterator[Batch], ahead: int = 2, pin: bool = False):
        self._queue: queue.Queue = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        self._pin = pin
        self._thread = threading.Thread(target=self._fill, args=(batches,), name="nmtkit-batches", daemon=True)
        self._thread.start()

    def _put(self, item: object) -> bool:
        """Hand ``item`` over, waiting for room; False if told to stop meanwhile."""
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _fill(self, batches: Iterator[Batch]) -> None:
        try:
            for batch in batches:
                if not self._put(batch.pinned() if self._pin else batch):
                    return
            self._put(_END)
        except BaseException as e:  # raised in the consumer, at this batch
            self._put(e)

    def __iter__(self) -> "Prefetched":
        return self

    def __next__(self) -> Batch:
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # stays done
            raise StopIteration
        if isinstance(item, BaseException):
            raise item
        return item

    def close(self, timeout: Optional[float] = 10.0) -> None:
        """Stop the worker and wait for it (it finishes the batch it is making)."""
        self._stop.set()
        self._thread.join(timeout)

    def __enter__(self) -> "Prefetched":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
