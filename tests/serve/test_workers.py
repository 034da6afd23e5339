"""Worker processes decoding batches: the results the server's own decoder gives, a failed batch fails alone, a
worker that dies is started again, one that cannot load is a one-line error, and closing ends them all."""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import threading
import time

import pytest

from nmtkit.decoding import Decoder, DecodeSettings
from nmtkit.errors import NmtkitError
from nmtkit.serve.workers import WorkerPool, decode_batch

LINES = [b"forty-two", b"", b"seven hundred", b"one"]


@pytest.fixture(scope="module")
def settings(trained_ckpt):
    return {"tiny": DecodeSettings(models=(str(trained_ckpt),), beam=3, threads=1, prefix=True, constraints=True)}


@pytest.fixture(scope="module")
def pool(settings):
    workers = WorkerPool(settings, 2)
    yield workers
    workers.close()


def test_a_worker_decodes_as_the_server_s_own_decoder(pool, settings):
    own = {"tiny": Decoder(settings["tiny"])}
    for key in [("tiny", 3, 1, False, False), ("tiny", 2, 2, True, False)]:
        lines = own["tiny"].lines([line.decode() for line in LINES])
        assert pool.decode(key, lines) == decode_batch(own, key, lines)


def test_a_worker_decodes_with_the_request_s_beam_each_line_its_own(pool, settings):
    """Against decoders of their own settings, not the code the worker runs: a request's beam is the one used, and
    each line gets its own translation."""
    text = ["forty-two", "seven hundred", "one", "nine thousand and six"]
    for beam in (1, 3):
        alone = Decoder(dataclasses.replace(settings["tiny"], beam=beam))
        expected = [list(alone.translate(alone.lines([line])))[0].texts for line in text]
        got = pool.decode(("tiny", beam, 1, False, False), alone.lines(text))
        assert [r.texts for r in got] == expected, beam


def test_a_failed_batch_is_one_line_and_the_worker_goes_on(pool):
    with pytest.raises(RuntimeError, match="KeyError: 'nope'"):
        pool.decode(("nope", 3, 1, False, False), LINES)
    assert [len(r.texts) for r in pool.decode(("tiny", 3, 1, False, False), LINES)] == [1, 1, 1, 1]


def test_a_worker_that_dies_decoding_fails_its_batch_and_is_started_again(settings):
    pool = WorkerPool(settings, 1)
    try:
        dead = pool.workers[0].process
        failed: list[BaseException] = []
        many = Decoder(settings["tiny"]).lines(["forty-two", "seven hundred", "one"] * 5000)  # (seconds of decoding)

        def decode_many() -> None:
            try:
                pool.decode(("tiny", 3, 1, False, False), many)
            except RuntimeError as e:
                failed.append(e)

        decoding = threading.Thread(target=decode_many)
        decoding.start()
        time.sleep(0.5)
        os.kill(dead.pid, signal.SIGKILL)
        decoding.join(60)
        assert [str(e) for e in failed] == ["worker 0 ended (exit code -9) while decoding; started again"]
        assert pool.workers[0].process.pid != dead.pid and not dead.is_alive()
        assert len(pool.decode(("tiny", 3, 1, False, False), LINES)) == 4
    finally:
        pool.close()
    assert not pool.workers


def test_a_worker_that_died_idle_is_started_again_and_decodes_the_batch(settings):
    pool = WorkerPool(settings, 1)
    try:
        dead = pool.workers[0].process
        os.kill(dead.pid, signal.SIGKILL)
        dead.join(10)
        assert len(pool.decode(("tiny", 3, 1, False, False), LINES)) == 4  # (no batch lost)
        assert pool.workers[0].process.pid != dead.pid
    finally:
        pool.close()


def test_workers_that_cannot_load_are_a_one_line_error_and_none_is_left(tmp_path):
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    before = set(multiprocessing.active_children())
    with pytest.raises(NmtkitError, match="--workers: worker 0 could not load the models: .*broken.pt"):
        WorkerPool({"x": DecodeSettings(models=(str(broken),), threads=1)}, 2)
    assert set(multiprocessing.active_children()) <= before


def test_workers_ignore_the_signals_that_stop_the_server_and_end_when_closed(settings):
    pool = WorkerPool(settings, 1)
    process = pool.workers[0].process
    os.kill(process.pid, signal.SIGINT)
    os.kill(process.pid, signal.SIGTERM)
    assert len(pool.decode(("tiny", 3, 1, False, False), LINES)) == 4  # (the server stops them, when it may)
    pool.close()
    assert process.exitcode == 0
