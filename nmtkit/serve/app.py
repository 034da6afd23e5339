"""The HTTP server's application (FastAPI): ``POST /translate``, ``GET /health``, ``GET /models``, the OpenAPI
documentation at ``/docs`` and a page to try the models at ``/``.

Every request's lines go through one :class:`~nmtkit.serve.batcher.Batcher`, so that requests arriving together
are decoded together. Errors are JSON ``{"error": "one line"}``: 400 for a body that is not JSON, 422 for a field
that is wrong (named), 413 for too many lines or characters, 408 for a body that does not arrive in time, 503 when
the queue is full or the server is stopping (with ``Retry-After``); the log says each error's line.
"""
from __future__ import annotations

import asyncio
import copy
import logging
import os
import signal
import socket
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from importlib import resources
from typing import Hashable, Optional, Sequence, Union, cast

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from nmtkit import __version__
from nmtkit.config import BEAM
from nmtkit.decoding import Decoder
from nmtkit.errors import NmtkitError
from nmtkit.search.continuous import ContinuousSearch
from nmtkit.search.translator import LineResult
from nmtkit.serve.batcher import Batcher, Dropped, Full, Job
from nmtkit.serve.workers import WorkerPool, decode_batch


@dataclass(frozen=True)
class Limits:
    """What the server accepts: lines and characters per request, jobs waiting, and how it batches (``max_batch``
    lines gathered for up to ``max_wait_ms``; with ``continuous``, requests join a running search where the model and
    the request's settings allow: :mod:`nmtkit.serve.batcher`)."""

    max_lines: int = 256
    max_chars: int = 100_000  #: in the lines, their prefixes and constraints
    max_constraints: int = 32  #: phrases per line (a constrained search's cost grows with their square)
    queue_size: int = 256
    max_batch: int = 32
    max_wait_ms: float = 5.0
    continuous: bool = False
    read_timeout: float = 30.0  #: seconds a request's body may take to arrive whole, from its headers


class TranslateRequest(BaseModel):
    """``POST /translate``'s body."""

    model_config = ConfigDict(extra="forbid", strict=True)  # (strict: no true for a beam, no "yes" for a flag)
    text: list[Union[str, list[str]]] = Field(
        description="the lines to translate; for a model with several inputs, each line's inputs as a list of "
                    "strings (or TAB-separated)")
    model: Optional[str] = Field(None, description="the model's name (GET /models) [default: the first]")
    beam: Optional[int] = Field(None, ge=BEAM.low, le=BEAM.high, description="beam size [default: the server's]")
    n_best: Optional[int] = Field(None, ge=BEAM.low, le=BEAM.high, description="outputs per line, best first [default: 1]")
    alignments: bool = Field(False, description="each output's word alignment with the line (Moses 'i-j' pairs, from "
                                                "the attention)")
    constraints: Optional[list[list[str]]] = Field(None, description="target phrases that each line's outputs contain "
                                                                     "(one list per line; []: none)")
    prefix: Optional[list[str]] = Field(None, description="a target prefix for each line (its output starts with it; "
                                                          "\"\": none)")


class Output(BaseModel):
    """One output of a line (``POST /translate``'s answer)."""

    text: str
    score: float = Field(description="log-probability / length^A: what ranks the n-best")
    logprob: float
    confidence: float = Field(description="the mean log-probability per token, </s> counted")
    tokens: int = Field(description="the output's length in tokens, </s> counted")
    alignment: Optional[str] = Field(None, description="with \"alignments\": Moses 'i-j' pairs")


class LineAnswer(BaseModel):
    """A line's outputs, and what was true of it."""

    outputs: list[Output]
    truncated: Optional[bool] = Field(None, description="true where the line was cut at the length limit")
    not_finite: Optional[bool] = Field(None, description="true where the model's scores were not finite")
    unmet_constraints: Optional[list[str]] = Field(None, description="the constraints the best output lacks")


class TranslateAnswer(BaseModel):
    """``POST /translate``'s answer: one entry per line, in order."""

    model: str
    translations: list[LineAnswer]


class ErrorAnswer(BaseModel):
    """Every error's body."""

    error: str = Field(description="one line saying what is wrong, naming the field")


#: the answers of ``POST /translate`` as the OpenAPI schema (``/docs``) describes them (the handler returns them as
#: dicts and JSON responses: the schema only documents)
ANSWERS: dict[Union[int, str], dict] = {
    200: {"model": TranslateAnswer, "description": "the translations"},
    **{status: {"model": ErrorAnswer, "description": what} for status, what in (
        (400, "the body is not JSON in UTF-8"),
        (408, "the body did not arrive whole in time (--read-timeout)"),
        (413, "too many lines, characters or constraints, or a body too large"),
        (422, "a field is wrong (named), or the body is not a JSON object"),
        (500, "decoding failed"),
        (503, "the queue is full, or the server is stopping: try again (Retry-After)"))}}


#: how pydantic's errors name the kinds a line of ``text`` may be (after its index): neither fits a line that is
#: another type, or a list holding one
LINE_KINDS = ("str", "list[str]")


def error(status: int, message: str, **headers: str) -> JSONResponse:
    """The JSON answer ``{"error": message}``, said in the log too (the access log's line names the request)."""
    logging.getLogger("uvicorn.error").info("answering %d: %s", status, message)
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def field_name(location: Sequence[Union[str, int]]) -> str:
    """A validation error's field, dotted (``text.3``), without the ``body`` it is in."""
    return ".".join(str(part) for part in location if part != "body") or "body"


def line_results(results: Sequence[LineResult]) -> list[dict]:
    """The JSON of each line's outputs, as ``translate --output-format json`` writes them (``truncated``: the line
    was longer than the model reads, and cut; ``not_finite``: the model's scores were not, and the outputs are
    empty)."""
    return [{"outputs": result.outputs(), **result.flags()} for result in results]


def flattened(*fields: Sequence[Union[str, Sequence[str]]]) -> list[str]:
    """The strings of request fields, each a list of strings or of lists of strings."""
    return [text for items in fields for item in items for text in ([item] if isinstance(item, str) else item)]


class BodyLimit:
    """ASGI middleware: a request body of more than ``most`` bytes gets 413, as its ``Content-Length`` says or, for
    a body sent in chunks, as it arrives (read whole here, then handed on); one that has not arrived whole
    ``timeout`` seconds after its headers gets 408, and one still arriving when ``stopping`` is set 503 (a client
    that stalls would hold its connection, and a stopping server, for ever)."""

    def __init__(self, app, most: int, timeout: float, stopping: threading.Event):
        self.app, self.most, self.timeout, self.stopping = app, most, timeout, stopping

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.most:
            return await self._refuse(f"a body of {int(length)} bytes; at most {self.most} are accepted", scope,
                                      receive, send)
        chunks: list[bytes] = []
        size, message = 0, cast(dict, {"more_body": True})
        deadline = asyncio.get_running_loop().time() + self.timeout
        while message.get("more_body"):
            late = await self._arrival(receive, deadline)
            if isinstance(late, JSONResponse):
                return await late(scope, receive, send)
            message = late
            if message["type"] != "http.request":  # (the client went: the application hears it too)
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.most:
                return await self._refuse(f"a body sent in chunks past {self.most} bytes, the most accepted", scope,
                                          receive, send)
        pending = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}
                   if message["type"] == "http.request" else message]

        async def replay():
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)

    async def _arrival(self, receive, deadline: float) -> Union[dict, JSONResponse]:
        """The body's next message, or the answer to give where it does not come before ``deadline`` or the server
        stops (looked at every tenth of a second: a signal sets ``stopping`` from another thread)."""
        loop, message = asyncio.get_running_loop(), asyncio.ensure_future(receive())
        while not message.done():
            if self.stopping.is_set() or loop.time() >= deadline:
                message.cancel()
                if self.stopping.is_set():
                    return error(503, "the server is stopping and the body had not arrived whole; try again",
                                 **{"Retry-After": "1", "Connection": "close"})
                return error(408, f"the body did not arrive whole within {self.timeout:g} s of the request's "
                                  "headers", Connection="close")
            await asyncio.wait({message}, timeout=min(0.1, deadline - loop.time()))
        return message.result()

    @staticmethod
    async def _refuse(message: str, scope, receive, send) -> None:
        await error(413, message)(scope, receive, send)


def make_app(decoders: dict[str, Decoder], limits: Limits = Limits(), worker_thread: bool = True,
             pool: Optional[WorkerPool] = None) -> FastAPI:
    """The application serving ``decoders`` by name (the first is the default); its batcher
    (``app.state.batcher``) decodes in a thread of its own from startup to shutdown, or, without ``worker_thread``,
    in the thread that calls its ``run`` (see :func:`serve`); or hands each batch to ``pool``'s worker processes,
    which hold the same models (``decoders`` then read the requests)."""
    default = next(iter(decoders))

    def stream(key: Hashable) -> Optional[ContinuousSearch]:
        name, beam, n_best, alignments, guided = cast(tuple, key)
        if guided or not limits.continuous:
            return None
        decoder = decoders[name]
        return decoder.continuous(replace(decoder.options, beam_size=beam, n_best=n_best), alignments)

    batcher = Batcher(partial(decode_batch, decoders) if pool is None else pool.decode, limits.max_batch,
                      limits.max_wait_ms / 1000, limits.queue_size, stream if pool is None else None,
                      workers=pool.size if pool else 1)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if worker_thread:
            batcher.start()
        yield
        await asyncio.get_running_loop().run_in_executor(None, batcher.stop)  # the requests in flight finish

    app = FastAPI(title="nmtkit", summary="Neural machine translation with attention", version=__version__,
                  lifespan=lifespan)
    app.state.batcher = batcher
    app.state.stopping = threading.Event()  # (set by a signal: bodies still arriving are not waited for)
    app.state.unanswered = 0  # requests given no translation at a second signal (dropped, or cut off while decoded)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        if first.get("type") == "json_invalid":
            return error(400, f"the body is not JSON: {first.get('ctx', {}).get('error', first['msg'])}")
        if tuple(first["loc"]) == ("body",):  # (a list, or JSON sent without its content type: FastAPI reads no object)
            return error(422, "body: expects a JSON object such as {\"text\": [\"...\"]}, sent with Content-Type: "
                              "application/json")
        if len(first["loc"]) > 3 and first["loc"][:2] == ("body", "text") and first["loc"][3] in LINE_KINDS:
            return error(422, f"{field_name(first['loc'][:3])}: expects a string, or a list of strings (a line of a "
                              "model with several inputs)")
        return error(422, f"{field_name(first['loc'])}: {first['msg']}")

    @app.exception_handler(StarletteHTTPException)
    async def refused(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = {404: f"no {request.url.path} here; see /docs", 405: f"{request.method} is not for "
                   f"{request.url.path}; see /docs"}.get(exc.status_code, str(exc.detail))
        if exc.status_code == 400 and "parsing the body" in str(exc.detail):  # (FastAPI's word for what json
            message = "the body cannot be read as JSON (not UTF-8, or nested too deep)"  # cannot decode or parse)
        return error(exc.status_code, message, **(exc.headers or {}))

    app.add_middleware(BodyLimit, most=4 * limits.max_chars + 65_536,  # (UTF-8 and JSON's quoting of max_chars)
                       timeout=limits.read_timeout, stopping=app.state.stopping)

    @app.get("/health")
    async def health() -> dict:
        """Whether the server is up, and how busy: requests waiting and in flight, the decoding workers, and since it
        started, the batches decoded, their lines and the seconds spent decoding them (summed over the workers), and
        continuous batching's search steps and the lines in them (summed over steps)."""
        return {"status": "ok", "waiting": batcher.waiting, "in_flight": batcher.in_flight,
                "workers": batcher.workers,
                "batches": batcher.batches, "lines": batcher.lines, "decoding_s": round(batcher.decoding_s, 3),
                "steps": batcher.steps, "step_lines": batcher.step_lines}

    @app.get("/models")
    async def models() -> dict:
        """The models served, by name (the first is the default)."""
        return {"models": [{"name": name, "arch": d.loaded.config["arch"], "inputs": list(d.loaded.model.inputs),
                            "checkpoints": list(d.settings.models), "beam": d.settings.beam,
                            "default": name == default} for name, d in decoders.items()]}

    @app.post("/translate", responses=ANSWERS)
    async def translate(body: TranslateRequest):
        """Translate lines: one result per line, in order, each with its n-best outputs (text, score,
        log-probability, confidence: the mean log-probability per token, and length in tokens)."""
        name = body.model or default
        if name not in decoders:
            return error(422, f"model: no model named {name!r}; the models are {', '.join(decoders)}")
        decoder = decoders[name]
        beam = body.beam or decoder.settings.beam
        n_best = body.n_best or 1
        if n_best > beam:
            return error(422, f"n_best: expects at most the beam size ({beam}), got {n_best}")
        if len(body.text) > limits.max_lines:
            return error(413, f"text: {len(body.text)} lines; at most {limits.max_lines} per request")
        for i, phrases in enumerate(body.constraints or ()):
            if len(phrases) > limits.max_constraints:
                return error(413, f"constraints.{i}: {len(phrases)} phrases; at most {limits.max_constraints} per line")
        chars = sum(map(len, flattened(body.text, body.prefix or [], body.constraints or [])))
        if chars > limits.max_chars:
            given = "text" + (", prefix and constraints" if body.prefix or body.constraints else "")
            return error(413, f"{given}: {chars} characters; at most {limits.max_chars} per request")
        try:
            lines = decoder.lines(body.text, body.prefix, body.constraints)
            if body.alignments:
                decoder.aligner()
        except NmtkitError as e:
            return error(422, str(e).replace("--alignments:", "alignments:"))
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()

        def done(outcome) -> None:  # (in the worker's thread)
            def settle() -> None:
                if not future.done():  # (the client may have gone)
                    future.set_result(outcome)
            loop.call_soon_threadsafe(settle)

        try:
            guided = any(body.prefix or ()) or any(body.constraints or ())  # (lines with a prefix or constraints)
            batcher.submit(Job(lines, (name, beam, n_best, body.alignments, guided), done))
        except Full as e:
            return error(503, f"the server is busy ({e}); try again", **{"Retry-After": "1"})
        try:
            outcome = await future
        except asyncio.CancelledError:  # (a second signal: the server stops without the requests in flight)
            outcome = Dropped("the server stopped before answering")
        if isinstance(outcome, Dropped):
            app.state.unanswered += 1
            return error(503, f"{outcome}; try again", **{"Retry-After": "1"})
        if isinstance(outcome, Exception):
            return error(500, f"decoding failed: {outcome}")
        return {"model": name, "translations": line_results(outcome)}

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        """A page to try the models: text in, translation out."""
        return resources.files("nmtkit.serve").joinpath("page.html").read_text(encoding="utf-8")

    return app


def check_address(host: str, port: int) -> None:
    """Refuse, in one line (exit 2), an address the server could not listen on (a port taken, a host not this
    machine's): before the models load, not after."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.create_server((host, port), family=family):  # (as uvicorn binds: SO_REUSEADDR)
            pass
    except OSError as e:  # (a name that does not resolve: gaierror, its strerror said)
        why = e.strerror if isinstance(e, socket.gaierror) or not e.errno else os.strerror(e.errno)
        raise NmtkitError(f"--host/--port: cannot serve on {host}:{port} ({why})", exit_code=2) from None


def serve(app: FastAPI, host: str, port: int) -> None:
    """Serve ``app`` (made without a worker thread) until SIGINT or SIGTERM: HTTP in a thread, and decoding on the
    calling thread, which must be the main one. PyTorch's CPU operations parallelised over several threads take
    several times longer when called from a thread other than the main one (each wakes its OpenMP team: about
    75 µs against 5-16 µs for a small one, bench/README.md), so the main thread decodes. A signal stops taking requests;
    those in flight are answered, then this returns. A second signal stops at once: the batch being decoded is
    finished, the requests not decoded yet are dropped, and a one-line error counts the requests left without their
    translation (those dropped, and those whose batch was decoded as the HTTP server stopped); a one-line error also
    says when the server could not start."""
    # (no lifespan: the worker is this thread, stopped below; and a forced stop cancelled the lifespan's task, which
    # uvicorn then logged as a traceback)
    logs = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    logs["handlers"]["access"]["stream"] = "ext://sys.stderr"  # (logs go to stderr, as every command's)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info", log_config=logs,
                                           timeout_graceful_shutdown=None, lifespan="off"))
    batcher = app.state.batcher

    def http() -> None:
        try:
            server.run()
        except SystemExit:  # (uvicorn's way of saying it could not start: told below)
            pass
        finally:
            batcher.stop(0)

    def stop(signum, frame) -> None:  # (a second signal: stop without waiting for the requests in flight)
        app.state.stopping.set()
        if server.should_exit:
            batcher.cancel()  # (at once: not one more batch taken, whose answer would find no event loop)
        server.force_exit = server.should_exit
        server.should_exit = True

    handlers = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=http, name="nmtkit-http")
    try:
        thread.start()
        batcher.run()
        thread.join()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    if not server.started:
        raise NmtkitError(f"--host/--port: could not serve on {host}:{port} (the log above says why)")
    if app.state.unanswered or batcher.dropped:
        raise NmtkitError(f"stopped at a second signal: {max(app.state.unanswered, batcher.dropped)} request(s) left "
                          f"unanswered ({batcher.dropped} of them dropped undecoded)")
