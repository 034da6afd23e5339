"""The server's application, served by uvicorn on a loopback port: what /translate answers, its errors, concurrent
clients each getting their own lines, a full queue, and the requests in flight finishing at shutdown."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx
import pytest
import uvicorn

from nmtkit.decoding import Decoder, DecodeSettings
from nmtkit.errors import NmtkitError
from nmtkit.search.translator import LineResult
from nmtkit.serve.app import ErrorAnswer, Limits, LineAnswer, Output, TranslateAnswer, line_results, make_app, serve
from tests.conftest import run

LINES = ["forty-two", "", "seven hundred", "one"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(decoders, limits=None, prepare=None):
    """``make_app(decoders, limits)`` served on a free loopback port, in a thread (``prepare(app)`` first, if given):
    its URL, and the server."""
    port = free_port()
    app = make_app(decoders, limits or Limits())
    if prepare:
        prepare(app)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        threading.Event().wait(0.02)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture(scope="module")
def decoder(trained_ckpt):
    return Decoder(DecodeSettings(models=(str(trained_ckpt),), beam=3, prefix=True, constraints=True))


@pytest.fixture(scope="module")
def url(decoder):
    with served({"tiny": decoder, "other": decoder}, Limits(max_lines=8, max_chars=200)) as (address, _):
        yield address


def test_translate_answers_as_the_command_line_does(url, trained_ckpt):
    cli = run(["translate", "-m", trained_ckpt, "--beam", 3], input="\n".join(LINES) + "\n").stdout.splitlines()
    r = httpx.post(f"{url}/translate", json={"text": LINES})
    assert r.status_code == 200 and r.json()["model"] == "tiny"
    translations = r.json()["translations"]
    assert [t["outputs"][0]["text"] for t in translations] == cli
    assert translations[1]["outputs"] == [{"text": "", "score": 0.0, "logprob": 0.0, "confidence": 0.0, "tokens": 0}]
    first = translations[0]["outputs"][0]
    assert first["confidence"] == pytest.approx(first["logprob"] / first["tokens"]) and first["confidence"] < 0


def test_a_request_chooses_its_model_beam_and_n_best(url, trained_ckpt):
    cli = run(["translate", "-m", trained_ckpt, "--beam", 4, "--n-best", 2], input="forty-two\n").stdout.splitlines()
    r = httpx.post(f"{url}/translate", json={"text": ["forty-two"], "model": "other", "beam": 4, "n_best": 2})
    assert r.json()["model"] == "other"
    assert [o["text"] for o in r.json()["translations"][0]["outputs"]] == [row.split(" ||| ")[1] for row in cli]


def test_a_request_s_prefixes_start_its_outputs(url, decoder):
    r = httpx.post(f"{url}/translate", json={"text": ["forty-two", "seven", "one"], "prefix": ["neun", "", "drei vier"]})
    texts = [t["outputs"][0]["text"] for t in r.json()["translations"]]
    assert texts[0].startswith("neun ") and texts[2].startswith("drei vier")
    assert texts[1] == decoder.translate_texts(["seven"])[0].texts[0]
    assert texts == [r.texts[0] for r in decoder.translate_texts(["forty-two", "seven", "one"],
                                                                  ["neun", "", "drei vier"])]


def test_a_request_s_constraints_are_in_its_outputs(url, decoder):
    r = httpx.post(f"{url}/translate", json={"text": ["forty-two", "seven"], "constraints": [["neun"], []]})
    texts = [t["outputs"][0]["text"] for t in r.json()["translations"]]
    assert "neun" in texts[0].split() and texts[1] == decoder.translate_texts(["seven"])[0].texts[0]
    r = httpx.post(f"{url}/translate", json={"text": ["forty-two"], "constraints": [["x"], ["y"]]})
    assert r.status_code == 422 and r.json()["error"] == "constraints: 2 constraints for 1 lines; give one per line"


def test_alignments_come_with_each_output_when_asked(url, decoder):
    r = httpx.post(f"{url}/translate", json={"text": ["forty-two", "seven"], "alignments": True, "n_best": 2})
    outputs = [t["outputs"] for t in r.json()["translations"]]
    want = list(decoder.translate(decoder.lines(["forty-two", "seven"]), alignments=True,
                                  options=replace(decoder.options, n_best=2)))
    assert [[o["alignment"] for o in line] for line in outputs] == [w.alignments for w in want]
    assert all(o["alignment"] for line in outputs for o in line)
    plain = httpx.post(f"{url}/translate", json={"text": ["forty-two"]}).json()["translations"][0]["outputs"][0]
    assert "alignment" not in plain


def test_an_answer_marks_a_line_cut_at_the_length_limit_or_lacking_constraints():
    results = [LineResult(0, ["a"], [-1.0], [-2.0], [2]), LineResult(1, ["b"], [-1.0], [-2.0], [2], truncated=True),
               LineResult(2, ["c"], [-1.0], [-2.0], [2], unmet=["x y"])]
    assert [sorted(line) for line in line_results(results)] == [["outputs"], ["outputs", "truncated"],
                                                                ["outputs", "unmet_constraints"]]
    assert line_results(results)[2]["unmet_constraints"] == ["x y"]


@pytest.mark.parametrize("body, status, message", [
    ({"text": ["a", "b"], "prefix": ["x"]}, 422, "prefix: 1 prefixes for 2 lines; give one per line"),
    ({"text": ["a"], "prefix": ["\udc80"]}, 422, "prefix.0: not valid Unicode"),
    ({"text": ["a"], "bogus": 1}, 422, "bogus: Extra inputs are not permitted"),
    ({"text": "a"}, 422, "text: Input should be a valid list"),
    ({"text": ["a", 3]}, 422, "text.1: expects a string, or a list of strings (a line of a model with several inputs)"),
    ({"text": [["a", 3]]}, 422, "text.0: expects a string, or a list of strings"),
    ({}, 422, "text: Field required"),
    ({"text": ["a"], "beam": 0}, 422, "beam: Input should be greater than or equal to 1"),
    ({"text": ["a"], "beam": True}, 422, "beam: Input should be a valid integer"),
    ({"text": ["a"], "beam": "4"}, 422, "beam: Input should be a valid integer"),
    ({"text": ["a"], "alignments": "yes"}, 422, "alignments: Input should be a valid boolean"),
    ({"text": ["a"], "beam": 2, "n_best": 3}, 422, "n_best: expects at most the beam size (2), got 3"),
    ({"text": ["a"], "model": "nope"}, 422, "model: no model named 'nope'; the models are tiny, other"),
    ({"text": [["a", "b"]]}, 422, "text.0: 2 inputs; this model reads 1"),
    ({"text": ["\ud800"]}, 422, "text.0: not valid Unicode"),
    ({"text": ["a"] * 9}, 413, "text: 9 lines; at most 8 per request"),
    ({"text": ["a" * 150, "b" * 51]}, 413, "text: 201 characters; at most 200 per request"),
    ({"text": ["a" * 50], "prefix": ["b" * 50], "constraints": [["c" * 101]]}, 413,
     "text, prefix and constraints: 201 characters; at most 200 per request"),
    ({"text": ["a", "b"], "constraints": [[], ["c"] * 33]}, 413, "constraints.1: 33 phrases; at most 32 per line"),
])
def test_bad_requests_are_one_line_naming_the_field(url, body, status, message):
    r = httpx.post(f"{url}/translate", content=json.dumps(body), headers={"content-type": "application/json"})
    assert r.status_code == status and message in r.json()["error"], r.text


def test_a_request_at_each_limit_is_answered(url):
    """The limits are the most allowed: 8 lines, 200 characters (prefixes and constraints counted), 32 phrases."""
    for body in ({"text": ["a"] * 8}, {"text": ["a" * 150, "b" * 50]},
                 {"text": ["a" * 50], "prefix": ["b" * 50], "constraints": [["c" * 100]]},
                 {"text": ["a", "b"], "constraints": [[], ["drei"] * 32]}):
        r = httpx.post(f"{url}/translate", json=body)
        assert r.status_code == 200 and len(r.json()["translations"]) == len(body["text"]), r.text


@pytest.mark.parametrize("content, kind", [(json.dumps({"text": ["a"]}), "application/x-www-form-urlencoded"),
                                           (json.dumps({"text": ["a"]}), None), (json.dumps(["a"]), "application/json")])
def test_a_body_that_is_not_a_json_object_says_what_to_send(url, content, kind):
    r = httpx.post(f"{url}/translate", content=content, headers={"content-type": kind} if kind else {})
    assert r.status_code == 422 and r.json()["error"] == ('body: expects a JSON object such as {"text": ["..."]}, '
                                                          "sent with Content-Type: application/json")


def test_a_body_that_is_not_json_or_too_big_is_refused_before_decoding(url):
    r = httpx.post(f"{url}/translate", content=b'{"text": [', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith("the body is not JSON")
    r = httpx.post(f"{url}/translate", content=b"x" * 70_000, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "70000 bytes" in r.json()["error"]
    r = httpx.post(f"{url}/translate", content=iter([b"x" * 40_000] * 2), headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.json() == {"error": "a body sent in chunks past 66336 bytes, the most accepted"}
    chunks = iter([b'{"text": ', b'["seven"]}'])  # (sent in chunks, without a Content-Length: read whole)
    r = httpx.post(f"{url}/translate", content=chunks, headers={"content-type": "application/json"})
    assert r.status_code == 200 and len(r.json()["translations"]) == 1
    r = httpx.post(f"{url}/translate", content=b'{"text": ["\xff"]}', headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json() == {"error": "the body cannot be read as JSON (not UTF-8, or nested "
                                                          "too deep)"}
    r = httpx.post(f"{url}/translate", content=b'{"text": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                   headers={"content-type": "application/json"})
    assert r.status_code == 400 and "nested too deep" in r.json()["error"]


def stalled_upload(port: int) -> socket.socket:
    """A connection that sent a request's headers and part of its body, then nothing more."""
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 100\r\n\r\n{\"text\"")
    return client


def answer_of(client: socket.socket) -> tuple[int, dict]:
    """The status and JSON body of the response a connection gets (the server closing it after)."""
    received = b""
    while chunk := client.recv(65536):
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_a_body_that_does_not_arrive_whole_in_time_gets_408(decoder):
    """(a client that stalled mid-body held its connection for ever)"""
    with served({"tiny": decoder}, Limits(read_timeout=0.5)) as (address, _):
        with stalled_upload(int(address.rsplit(":", 1)[1])) as client:
            status, body = answer_of(client)
        assert status == 408 and body == {"error": "the body did not arrive whole within 0.5 s of the request's "
                                                   "headers"}
        assert httpx.post(f"{address}/translate", json={"text": ["one"]}).status_code == 200


def test_unknown_paths_and_methods_are_json_errors(url):
    r = httpx.get(f"{url}/nope")
    assert r.status_code == 404 and r.json() == {"error": "no /nope here; see /docs"}
    r = httpx.get(f"{url}/translate")
    assert r.status_code == 405 and r.json() == {"error": "GET is not for /translate; see /docs"}


def test_health_models_page_and_api_docs(url):
    before = httpx.get(f"{url}/health").json()
    assert {k: before[k] for k in ("status", "waiting", "in_flight")} == {"status": "ok", "waiting": 0, "in_flight": 0}
    assert httpx.post(f"{url}/translate", json={"text": ["a b", "c"]}).status_code == 200
    after = httpx.get(f"{url}/health").json()
    assert (after["batches"] - before["batches"], after["lines"] - before["lines"]) == (1, 2)
    assert after["decoding_s"] > before["decoding_s"]
    assert (after["steps"], after["step_lines"]) == (0, 0)  # (no continuous batching)
    models = httpx.get(f"{url}/models").json()["models"]
    assert [(m["name"], m["arch"], m["default"], m["beam"]) for m in models] == \
        [("tiny", "rnnsearch", True, 3), ("other", "rnnsearch", False, 3)]
    page = httpx.get(f"{url}/")
    assert page.status_code == 200 and 'id="translate"' in page.text and "/translate" in page.text
    assert httpx.get(f"{url}/docs").status_code == 200
    spec = httpx.get(f"{url}/openapi.json").json()
    answers = spec["paths"]["/translate"]["post"]["responses"]
    assert sorted(answers) == ["200", "400", "408", "413", "422", "500", "503"]
    assert answers["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorAnswer")
    assert spec["components"]["schemas"]["ErrorAnswer"]["required"] == ["error"]


def test_answers_are_what_the_api_documentation_says(url):
    """The schema /docs shows, checked against real answers (strictly: no field it does not name)."""
    body = {"text": ["forty-two", "seven"], "n_best": 2, "alignments": True, "constraints": [["neun"], []]}
    answer = httpx.post(f"{url}/translate", json=body).json()
    TranslateAnswer.model_validate(answer)
    assert set(answer) <= set(TranslateAnswer.model_fields)
    for line in answer["translations"]:
        assert set(line) <= set(LineAnswer.model_fields)
        assert all(set(output) == set(Output.model_fields) for output in line["outputs"])  # (alignments asked)
    error = httpx.post(f"{url}/translate", json={"text": ["a"], "beam": 0}).json()
    assert ErrorAnswer.model_validate(error) and set(error) == set(ErrorAnswer.model_fields)


def concurrent_clients(url, decoder) -> None:
    """Eight clients sending 24 requests of 1-3 lines (every fifth with a target prefix on its first line): each gets
    its own lines' translations, in order."""
    requests = [[LINES[(i + k) % 4] for k in range(1 + i % 3)] for i in range(24)]
    prefixes = [["tausend"] + [""] * (len(lines) - 1) if i % 5 == 4 else None for i, lines in enumerate(requests)]

    def ask(lines, prefix):
        body = {"text": lines, **({"prefix": prefix} if prefix else {})}
        return httpx.post(f"{url}/translate", json=body, timeout=60).json()["translations"]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(ask, requests, prefixes))
    for i, (lines, prefix, answer) in enumerate(zip(requests, prefixes, answers)):
        want = [r.texts[0] for r in decoder.translate_texts(lines, prefixes=prefix)]
        assert [t["outputs"][0]["text"] for t in answer] == want, f"request {i}"
        assert not (prefix and lines[0]) or want[0].startswith("tausend")


def test_concurrent_clients_each_get_their_own_lines_in_order(url, decoder):
    concurrent_clients(url, decoder)


def test_with_continuous_batching_concurrent_clients_get_what_batches_give(decoder):
    with served({"tiny": decoder}, Limits(max_batch=6, continuous=True)) as (address, _):
        concurrent_clients(address, decoder)
        health = httpx.get(f"{address}/health").json()
    assert health["lines"] == sum(1 + i % 3 for i in range(24)) and health["in_flight"] == 0
    assert health["steps"] and health["steps"] <= health["step_lines"] <= 6 * health["steps"]  # (max_batch lines a step)


def on_decoding(batcher, call) -> None:
    """Have ``call()`` run in the decoding thread as each batch is decoded, or each step of a running search taken."""
    decode, stream = batcher.decode, batcher.stream
    batcher.decode = lambda key, lines: call() or decode(key, lines)

    def streamed(key):
        search = stream(key)
        if search is not None:
            step = search.step
            search.step = lambda: call() or step()
        return search

    batcher.stream = streamed


@pytest.mark.parametrize("continuous", [False, True])
def test_requests_beyond_the_queue_get_503_and_the_ones_in_flight_finish_at_shutdown(decoder, continuous):
    gate, entered = threading.Event(), threading.Event()

    def held():
        entered.set()
        gate.wait(30)

    limits = Limits(queue_size=1, max_batch=1, max_wait_ms=0, continuous=continuous)
    with served({"tiny": decoder}, limits, lambda app: on_decoding(app.state.batcher, held)) as (address, server):
        with ThreadPoolExecutor(4) as pool:
            first = pool.submit(httpx.post, f"{address}/translate", json={"text": ["one"]}, timeout=60)
            assert entered.wait(30)  # the worker holds the first request
            second = pool.submit(httpx.post, f"{address}/translate", json={"text": ["forty-two"]}, timeout=60)
            while httpx.get(f"{address}/health").json()["waiting"] < 1:
                threading.Event().wait(0.01)
            refused = httpx.post(f"{address}/translate", json={"text": ["seven"]})
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "busy" in refused.json()["error"]
            server.should_exit = True  # shutdown begins with two requests in flight
            threading.Event().wait(0.2)
            gate.set()
            answers = [first.result(30), second.result(30)]
    assert [a.status_code for a in answers] == [200, 200]
    assert [a.json()["translations"][0]["outputs"][0]["text"] for a in answers] == \
        [r.texts[0] for r in decoder.translate_texts(["one", "forty-two"])]


def test_the_batchers_bounds_are_the_limits_given(decoder):
    limits = Limits(max_batch=7, max_wait_ms=250, queue_size=3)
    batcher = make_app({"tiny": decoder}, limits, worker_thread=False).state.batcher
    assert (batcher.max_batch, batcher.max_wait, batcher.jobs.maxsize) == (7, 0.25, 3)


@pytest.mark.parametrize("continuous", [False, True])
def test_serve_decodes_on_the_main_thread_and_returns_on_sigterm_once_requests_are_answered(decoder, continuous):
    app = make_app({"tiny": decoder}, Limits(continuous=continuous), worker_thread=False)
    batcher, decoded_on = app.state.batcher, []
    on_decoding(batcher, lambda: decoded_on.append(threading.current_thread()))
    port, answers = free_port(), []

    def client() -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            while True:
                try:
                    http.get("/health")
                    break
                except httpx.TransportError:
                    threading.Event().wait(0.05)
            answers.append(http.post("/translate", json={"text": ["one"]}))
        os.kill(os.getpid(), signal.SIGTERM)

    handler = signal.getsignal(signal.SIGTERM)
    threading.Thread(target=client).start()
    serve(app, "127.0.0.1", port)  # (returns on the signal)
    assert answers[0].status_code == 200 and decoded_on and set(decoded_on) == {threading.main_thread()}
    assert signal.getsignal(signal.SIGTERM) is handler and batcher.finished.is_set()


@pytest.mark.parametrize("continuous", [False, True])
def test_a_second_signal_stops_at_once_and_counts_the_requests_dropped(decoder, continuous, capfd):
    """The batch being decoded (continuous: the search's step) is finished, the requests waiting are dropped (and
    the search's unfinished lines): serve returns with a one-line error counting them, and every answer a client
    gets is JSON; the log holds no traceback."""
    gate, entered = threading.Event(), threading.Event()
    app = make_app({"tiny": decoder}, Limits(max_batch=1, max_wait_ms=0, continuous=continuous), worker_thread=False)

    def held() -> None:
        entered.set()
        gate.wait(30)

    on_decoding(app.state.batcher, held)
    port, answers = free_port(), []

    def ask() -> None:
        try:
            answers.append(httpx.post(f"http://127.0.0.1:{port}/translate", json={"text": ["one"]}, timeout=30))
        except httpx.TransportError:  # (the connection closed with the server)
            pass

    def client() -> None:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health")
                break
            except httpx.TransportError:
                threading.Event().wait(0.05)
        asking = [threading.Thread(target=ask) for _ in range(4)]
        for thread in asking:
            thread.start()
        assert entered.wait(30)
        while httpx.get(f"http://127.0.0.1:{port}/health").json()["waiting"] < 3:
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(0.3)
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(0.5)
        gate.set()
        for thread in asking:
            thread.join(30)

    asker = threading.Thread(target=client)
    asker.start()
    # (the one being decoded too, whose answer found the HTTP server stopped: it was not counted)
    dropped = "[34]" if continuous else "3"  # (continuous: the line in the search too, unless its step ended it)
    with pytest.raises(NmtkitError, match=rf"^stopped at a second signal: 4 request\(s\) left unanswered \({dropped} "
                                          r"of them dropped undecoded\)$"):
        serve(app, "127.0.0.1", port)
    asker.join(30)
    assert not asker.is_alive() and app.state.batcher.finished.is_set()
    assert answers and all(a.status_code == 503 and "error" in a.json() for a in answers), [a.text for a in answers]
    assert "Traceback" not in capfd.readouterr().err  # (uvicorn's log)


def test_a_signal_answers_a_stalled_upload_503_and_serve_returns(decoder, capfd):
    """(a client that sent half a body kept the server from stopping for as long as it kept its connection open;
    and uvicorn wrote its access log on stdout)"""
    app = make_app({"tiny": decoder}, Limits(), worker_thread=False)  # (the body's time limit: 30 s)
    port, answers = free_port(), []

    def client() -> None:
        while True:
            try:
                answers.append(httpx.post(f"http://127.0.0.1:{port}/translate", json={"text": []}))
                break
            except httpx.TransportError:
                threading.Event().wait(0.05)
        with stalled_upload(port) as stalled:
            threading.Event().wait(0.3)
            os.kill(os.getpid(), signal.SIGTERM)
            answers.append(answer_of(stalled))

    asker = threading.Thread(target=client)
    asker.start()
    serve(app, "127.0.0.1", port)  # (returns once the stalled upload is answered)
    asker.join(30)
    assert answers[1] == (503, {"error": "the server is stopping and the body had not arrived whole; try again"})
    out, err = capfd.readouterr()
    assert '"POST /translate HTTP/1.1" 200' in err and "POST" not in out  # (logs go to stderr)
    assert "answering 503: the server is stopping" in err and "Traceback" not in err


def test_serve_names_the_address_it_cannot_listen_on(decoder):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(NmtkitError, match=f"--host/--port: could not serve on 127.0.0.1:{port}"):
            serve(make_app({"tiny": decoder}, worker_thread=False), "127.0.0.1", port)
