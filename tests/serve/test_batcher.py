"""Dynamic batching: jobs arriving together share a batch, each gets its own results in order, nothing is lost."""
import threading

import pytest

from nmtkit.search.translator import LineResult
from nmtkit.serve.batcher import Batcher, Dropped, Full, Job


class Recorder:
    """A decode that upper-cases lines and records each batch (its key and lines); ``gate`` holds it."""

    def __init__(self):
        self.calls: list[tuple[str, list[bytes]]] = []
        self.gate, self.entered = threading.Event(), threading.Event()
        self.gate.set()

    def __call__(self, key, lines):
        self.entered.set()
        self.gate.wait(10)
        self.calls.append((key, list(lines)))
        if b"boom" in lines:
            raise RuntimeError("boom")
        return [LineResult(i, [line.decode().upper()], [0.0], [0.0], [1]) for i, line in enumerate(lines)]


def job(lines, key="a"):
    """A job and the list its outcome lands in (with an event set when it does)."""
    got: list = []
    done = threading.Event()
    return Job([s.encode() for s in lines], key, lambda outcome: (got.append(outcome), done.set())), got, done


def submit_while_held(batcher, recorder, jobs):
    """Submit ``jobs`` while the worker is busy with a first job, so that they wait together."""
    recorder.gate.clear()
    first, _, first_done = job(["first"])
    batcher.submit(first)
    assert recorder.entered.wait(10)  # the worker decodes it
    for j, _, _ in jobs:
        batcher.submit(j)
    recorder.gate.set()
    first_done.wait(10)
    for _, _, done in jobs:
        assert done.wait(10)


def test_jobs_arriving_together_share_a_batch_and_get_their_own_lines_in_order():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=8, max_wait=0.05).start()
    jobs = [job(["x1", "x2"]), job(["y1"]), job(["z1", "z2", "z3"])]
    submit_while_held(batcher, recorder, jobs)
    assert recorder.calls[1] == ("a", [b"x1", b"x2", b"y1", b"z1", b"z2", b"z3"])
    assert [[r.texts[0] for r in got[0]] for _, got, _ in jobs] == [["X1", "X2"], ["Y1"], ["Z1", "Z2", "Z3"]]
    assert [[r.index for r in got[0]] for _, got, _ in jobs] == [[0, 1], [0], [0, 1, 2]]
    assert all(j.batched_with == 6 for j, _, _ in jobs) and batcher.in_flight == 0
    assert (batcher.batches, batcher.lines) == (2, 7) and batcher.decoding_s > 0  # ("first", then the three)
    batcher.stop(10)


def test_a_batch_holds_one_settings_and_at_most_max_batch_lines_others_wait_in_order():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=3, max_wait=0.05).start()
    jobs = [job(["a1", "a2"]), job(["b1"], key="b"), job(["a3"]), job(["a4", "a5"]), job(["b2"], key="b")]
    submit_while_held(batcher, recorder, jobs)
    assert recorder.calls[1:] == [("a", [b"a1", b"a2", b"a3"]), ("b", [b"b1", b"b2"]), ("a", [b"a4", b"a5"])]
    assert [got[0][0].texts[0] for _, got, _ in jobs] == ["A1", "B1", "A3", "A4", "B2"]
    batcher.stop(10)


def test_jobs_passed_over_twice_keep_their_order_of_arrival():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=2, max_wait=0.05).start()
    jobs = [job(["a1"]), job(["b1"], key="b"), job(["c1"], key="c"), job(["b2"], key="b"), job(["d1"], key="d"),
            job(["a2"])]
    submit_while_held(batcher, recorder, jobs)  # a1+a2 first; then b1, c1 and b2 held: b1+b2 pass c1 by
    assert recorder.calls[1:] == [("a", [b"a1", b"a2"]), ("b", [b"b1", b"b2"]), ("c", [b"c1"]), ("d", [b"d1"])]
    batcher.stop(10)
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=2, max_wait=0.05).start()
    jobs = [job(["a1"]), job(["b1"], key="b"), job(["c1"], key="c"), job(["d1"], key="d"), job(["a2"])]
    submit_while_held(batcher, recorder, jobs)  # c1 and d1 passed over together, twice: still c1 first
    assert recorder.calls[1:] == [("a", [b"a1", b"a2"]), ("b", [b"b1"]), ("c", [b"c1"]), ("d", [b"d1"])]
    batcher.stop(10)


def test_the_worker_can_run_in_the_calling_thread_until_stopped():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=4, max_wait=0.01)
    threads: list = []
    batcher.decode = lambda key, lines: threads.append(threading.current_thread()) or recorder(key, lines)
    j, got, done = job(["x"])
    batcher.submit(j)
    threading.Timer(0.2, batcher.stop).start()
    batcher.run()  # returns once stopped, every job done
    assert threads == [threading.current_thread()] and got[0][0].texts == ["X"] and batcher.finished.is_set()


def test_a_failed_batch_fails_its_jobs_only_and_the_worker_goes_on():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=4, max_wait=0.05).start()
    bad, good = [job(["ok", "boom"]), job(["fine"])], [job(["later"], key="b")]
    submit_while_held(batcher, recorder, bad + good)
    assert all(isinstance(got[0], RuntimeError) for _, got, _ in bad)
    assert good[0][1][0][0].texts == ["LATER"]
    batcher.stop(10)


def test_a_full_queue_refuses_and_stopping_finishes_every_job_submitted():
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=1, max_wait=0, queue_size=2).start()
    recorder.gate.clear()
    held, _, _ = job(["held"])
    batcher.submit(held)
    assert recorder.entered.wait(10)  # the worker has taken it and waits at the gate
    waiting = [job(["w1"]), job(["w2"])]
    for j, _, _ in waiting:
        batcher.submit(j)
    with pytest.raises(Full, match="2 requests are waiting"):
        batcher.submit(job(["refused"])[0])
    stopper = threading.Thread(target=batcher.stop)
    stopper.start()
    recorder.gate.set()
    stopper.join(10)
    assert not batcher.thread.is_alive() and [got[0][0].texts for _, got, _ in waiting] == [["W1"], ["W2"]]


def test_jobs_set_aside_while_gathering_count_as_waiting():
    """A job of other settings met while a batch is gathered leaves the queue for ``held``: it still waits, and
    counts against the queue's size."""
    batcher = Batcher(Recorder(), queue_size=2)
    batcher.held.append(job(["other"], key="b")[0])
    batcher.submit(job(["queued"])[0])
    assert batcher.waiting == 2
    with pytest.raises(Full, match="2 requests are waiting"):
        batcher.submit(job(["refused"])[0])


def test_jobs_passed_over_while_a_batch_is_gathered_count_as_waiting():
    """(They left the queue: while the batch was gathered, nothing counted them, and a server took any number.)"""
    import time

    def taken() -> None:  # (the gathering worker takes the jobs from the queue)
        deadline = time.monotonic() + 10
        while batcher.jobs.qsize() and time.monotonic() < deadline:
            time.sleep(0.01)

    batcher = Batcher(Recorder(), max_batch=8, max_wait=10, queue_size=2).start()
    first, got, done = job(["a1"])
    batcher.submit(first)
    taken()
    others = [job(["b1"], key="b"), job(["b2"], key="b")]
    for j, _, _ in others:
        batcher.submit(j)
    taken()
    assert batcher.jobs.qsize() == 0 and batcher.waiting == 2 and not done.is_set()
    with pytest.raises(Full, match="2 requests are waiting"):
        batcher.submit(job(["refused"], key="b")[0])
    batcher.stop(10)  # (ends the gathering)
    assert got[0][0].texts == ["A1"] and [g[0][0].texts for _, g, _ in others] == [["B1"], ["B2"]]


@pytest.mark.parametrize("workers", [1, 2])
def test_cancelling_finishes_the_batch_being_decoded_and_drops_the_rest(workers):
    """(A server's second signal.) Every job is settled, none decoded after the cancel; a job whose answer cannot
    be handed over (its client's event loop gone) stops neither the worker nor the stop."""
    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=1, max_wait=0, workers=workers).start()
    recorder.gate.clear()
    first, got_first, _ = job(["first"])
    batcher.submit(first)
    assert recorder.entered.wait(10)
    gone = Job([b"gone"], "a", lambda outcome: 1 / 0)  # (its done raises)
    rest = [job(["w1"]), job(["w2", "x"], key="b")]
    for j in (gone, *(j for j, _, _ in rest)):
        batcher.submit(j)
    batcher.cancel()
    stopper = threading.Thread(target=batcher.stop)
    stopper.start()
    recorder.gate.set()
    stopper.join(10)
    assert not stopper.is_alive() and batcher.finished.is_set()
    decoded = [lines for _, lines in recorder.calls]
    assert decoded[0] == [b"first"] and [b"w2", b"x"] not in decoded and got_first[0][0].texts == ["FIRST"]
    assert all(isinstance(got[0], Dropped) for _, got, _ in rest) and batcher.in_flight == 0
    assert batcher.dropped == 2 + ([b"gone"] not in decoded)  # (a second worker may have taken it before the cancel)


def test_cancelling_while_a_batch_is_gathered_drops_it_undecoded():
    """(A server's second signal during --max-wait-ms: the batch was decoded for no one, and not counted.)"""
    import time

    recorder = Recorder()
    batcher = Batcher(recorder, max_batch=8, max_wait=10).start()
    jobs = [job(["a1"]), job(["b1"], key="b")]
    for j, _, _ in jobs:
        batcher.submit(j)
    deadline = time.monotonic() + 10
    while batcher.jobs.qsize() and time.monotonic() < deadline:  # (the gathering worker has taken both)
        time.sleep(0.01)
    batcher.cancel()
    batcher.stop(10)
    assert batcher.finished.is_set() and recorder.calls == [] and batcher.dropped == 2
    assert all(isinstance(got[0], Dropped) for _, got, _ in jobs) and batcher.in_flight == 0


def test_with_several_workers_batches_are_decoded_at_once_and_stopping_waits_for_them():
    gates, together, threads = [threading.Event(), threading.Event()], threading.Barrier(3), []
    third = threading.Event()

    def decode(key, lines):
        threads.append(threading.current_thread())
        if len(threads) <= 2:
            together.wait(10)  # (the first two batches, being decoded at once, and the test meet here)
        else:
            third.set()
        gates[len(threads) > 2].wait(10)
        return [LineResult(i, [line.decode().upper()], [0.0], [0.0], [1]) for i, line in enumerate(lines)]

    batcher = Batcher(decode, max_batch=1, max_wait=0, workers=2).start()
    jobs = [job(["a"]), job(["b"]), job(["c"])]
    for j, _, _ in jobs:
        batcher.submit(j)
    together.wait(10)
    stopper = threading.Thread(target=batcher.stop)
    stopper.start()
    assert not third.wait(0.2)  # (the third waits for an idle worker)
    gates[0].set()
    assert third.wait(10)
    stopper.join(0.2)
    assert stopper.is_alive()  # (stopping waits for the batch being decoded)
    gates[1].set()
    stopper.join(10)
    assert [got[0][0].texts for _, got, _ in jobs] == [["A"], ["B"], ["C"]] and batcher.finished.is_set()
    assert len(set(threads[:2])) == 2 and batcher.in_flight == 0 and (batcher.batches, batcher.lines) == (3, 3)


def test_continuous_batching_runs_one_search_in_one_worker():
    with pytest.raises(ValueError, match="one search, in one worker"):
        Batcher(Recorder(), stream=lambda key: None, workers=2)


class Steps:
    """A running search (continuous batching) where a line of n characters takes n steps, each step waiting for a
    tick of ``ticks``; the key ``"b"`` has none (its jobs are decoded in batches); records what it is given."""

    def __init__(self):
        self.ticks = threading.Semaphore(0)
        self.live: dict = {}  # tag -> [lines, steps left]
        self.added: list[list[bytes]] = []
        self.waiting = threading.Event()  # set while a step waits for its tick

    def __call__(self, key):
        return None if key == "b" else self

    @property
    def busy(self):
        return bool(self.live)

    def add(self, tag, lines):
        if b"bad" in lines:
            raise ValueError("bad line")
        self.added.append(list(lines))
        self.live[tag] = [lines, max(len(line) for line in lines)]

    def step(self):
        self.waiting.set()
        assert self.ticks.acquire(timeout=10)
        self.waiting.clear()
        if any(b"boom" in lines for lines, _ in self.live.values()):
            self.live.clear()  # (the batcher makes a new search next)
            raise RuntimeError("boom")
        done = []
        for tag, entry in list(self.live.items()):
            entry[1] -= 1
            if not entry[1]:
                del self.live[tag]
                done.append((tag, [LineResult(i, [line.decode().upper()], [0.0], [0.0], [1])
                                   for i, line in enumerate(entry[0])]))
        return done


def tick(steps, n=1):
    """Let the search take ``n`` steps, each once it waits for it."""
    for _ in range(n):
        assert steps.waiting.wait(10)
        steps.waiting.clear()
        steps.ticks.release()


def test_jobs_join_a_running_search_and_are_answered_as_soon_as_their_lines_are_done():
    steps = Steps()
    batcher = Batcher(Recorder(), max_batch=3, stream=steps).start()  # (the two jobs' lines fill it: they may join)
    long, long_got, long_done = job(["aaaa"])
    batcher.submit(long)
    assert steps.waiting.wait(10)  # step 1 of the long job waits
    short, short_got, short_done = job(["bb", "c"])
    batcher.submit(short)
    tick(steps, 3)  # it joins after step 1, and is done at step 3
    assert short_done.wait(10) and not long_done.is_set()
    assert batcher.decoding_s > 0  # (counted as the search goes, not once it is over)
    assert [r.texts[0] for r in short_got[0]] == ["BB", "C"] and [r.index for r in short_got[0]] == [0, 1]
    tick(steps)
    assert long_done.wait(10) and [r.texts[0] for r in long_got[0]] == ["AAAA"]
    assert (long.batched_with, short.batched_with) == (1, 3)
    assert steps.added == [[b"aaaa"], [b"bb", b"c"]] and batcher.in_flight == 0
    assert (batcher.batches, batcher.lines) == (1, 3)
    assert (batcher.steps, batcher.step_lines) == (4, 1 + 3 + 3 + 1)  # (the short job's two lines in steps 2 and 3)
    batcher.stop(10)


def test_the_time_decoding_is_counted_before_the_answers_and_nothing_after_the_last():
    """(/health's decoding time of a continuous search took in the answering after its last step: a load test's
    phase read it busy over 100% of its time)"""
    steps = Steps()
    batcher = Batcher(Recorder(), max_batch=4, stream=steps).start()
    seen: list = []
    done = threading.Event()
    batcher.submit(Job([b"ab"], "a", lambda outcome: (seen.append(batcher.decoding_s), done.set())))
    tick(steps, 2)
    assert done.wait(10) and seen[0] > 0
    threading.Event().wait(0.05)  # (the worker is past the search: idle)
    batcher.stop(10)
    assert batcher.decoding_s == seen[0]


def test_a_job_that_may_not_join_waits_for_the_search_to_drain_and_newer_ones_wait_behind_it():
    steps, recorder = Steps(), Recorder()
    batcher = Batcher(recorder, max_batch=3, stream=steps).start()
    first, _, first_done = job(["aa"])
    batcher.submit(first)
    assert steps.waiting.wait(10)
    big, _, big_done = job(["xx", "y", "z"])  # (the search would hold 4 lines)
    other, _, other_done = job(["other"], key="b")
    late, _, late_done = job(["l"])
    for j in (big, other, late):
        batcher.submit(j)
    tick(steps, 2)
    assert first_done.wait(10) and steps.waiting.wait(10)  # none joined (the big one came first), which is searched
    assert steps.added == [[b"aa"], [b"xx", b"y", b"z"]]
    tick(steps, 2)
    assert big_done.wait(10) and other_done.wait(10)
    assert recorder.calls == [("b", [b"other"])]  # (decoded in a batch, before the late job's search)
    tick(steps)
    assert late_done.wait(10) and steps.added[-1] == [b"l"]
    batcher.stop(10)


def test_a_failed_search_fails_its_jobs_only_and_a_job_that_cannot_join_gets_its_error():
    steps = Steps()
    batcher = Batcher(Recorder(), max_batch=8, stream=steps).start()
    bad, bad_got, bad_done = job(["bad"])
    batcher.submit(bad)
    assert bad_done.wait(10) and isinstance(bad_got[0], ValueError)
    boom, boom_got, boom_done = job(["boom"])
    batcher.submit(boom)
    tick(steps)
    assert boom_done.wait(10) and isinstance(boom_got[0], RuntimeError)
    fine, fine_got, fine_done = job(["ok"])
    batcher.submit(fine)
    tick(steps, 2)
    assert fine_done.wait(10) and fine_got[0][0].texts == ["OK"] and batcher.in_flight == 0
    batcher.stop(10)
