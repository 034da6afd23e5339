"""Batches made ahead in a background thread: the same batches in order, errors where they happened, a worker that
stops when the consumer leaves early."""
import threading
import time

import pytest

from nmtkit.data.batching import make_batch
from nmtkit.data.prefetch import Prefetched


def batches(n, fail_at=None, made=None):
    for k in range(n):
        if k == fail_at:
            raise OSError(f"shard damaged at batch {k}")
        if made is not None:
            made.append(k)
        yield make_batch([[4 + k]], [[5 + k]])


def test_the_same_batches_in_order():
    with Prefetched(batches(7), ahead=2) as ahead:
        got = [int(b["src"].data[0, 0]) for b in ahead]
    assert got == [4 + k for k in range(7)]
    assert next(iter(ahead), None) is None  # done stays done


def test_an_error_is_raised_where_its_batch_would_have_come():
    seen = []
    with pytest.raises(OSError, match="shard damaged at batch 3"):
        with Prefetched(batches(7, fail_at=3), ahead=2) as ahead:
            for b in ahead:
                seen.append(int(b["src"].data[0, 0]))
    assert seen == [4, 5, 6]


def test_leaving_early_stops_the_worker():
    made = []
    with Prefetched(batches(1000, made=made), ahead=2) as ahead:
        next(ahead)
    assert len(made) <= 5  # the one taken, two waiting, one being handed over: not the thousand
    assert not any(t.name == "nmtkit-batches" and t.is_alive() for t in threading.enumerate())


def test_no_more_than_ahead_batches_wait_while_the_consumer_is_busy():
    """(the bound keeps memory flat: a worker faster than the updates would otherwise make the whole epoch)"""
    made = []
    with Prefetched(batches(1000, made=made), ahead=2) as ahead:
        next(ahead)
        deadline = time.time() + 5
        while len(made) < 3 and time.time() < deadline:  # (the worker fills its queue)
            time.sleep(0.01)
        time.sleep(0.3)  # (time for it to make more, were it unbounded)
        assert 3 <= len(made) <= 4  # the one taken, two waiting, at most one being handed over
