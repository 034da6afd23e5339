"""Load test of ``nmtkit serve`` on the loopback interface: concurrent clients sending one sentence a request.

First ``nmtkit translate`` decodes the sentences (batch 32) for the reference outputs and its speed (model loading
excluded, from its log); then one ``nmtkit serve`` process answers 1, 4 and 16 concurrent clients in turn (the
``--clients`` counts), each phase sending every sentence once as its own request. For each phase: sentences/s, the
ratio to translate's, p50/p99 latency, the server's mean batch (with ``--continuous``, the lines a search step
carries, on average), and every answer checked against translate's output for its sentence (none
lost, none mixed up: an answer that is another sentence's translation is mixed up; one that is neither is counted
apart, as a sentence decoded otherwise in another batch). Bounded in count
(``--lines``) and time (``--time-limit`` per phase: what is left unsent is reported).

    python bench/serve_load.py -m MODEL -i ../shared/data/lo-ende/test.en --lines 500 --threads 2 [--json OUT]

It runs ``python -m nmtkit`` with its own interpreter, so the checkout on ``PYTHONPATH`` will do (no installed
command needed: a bare GPU machine, ``bench/gpu_check.sh``).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from served_lines import first_lines  # (bench/: the script's folder is on the path)

NMTKIT = [sys.executable, "-m", "nmtkit"]  #: the command line of nmtkit


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))] if ordered else 0.0


def translate_reference(args, lines: list[str], work: Path) -> tuple[list[str], float]:
    """``nmtkit translate``'s outputs of ``lines`` and its sentences/s (model loading excluded)."""
    source, output = work / "input.txt", work / "output.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    run = subprocess.run([*NMTKIT, "translate", "-m", args.model, "-i", str(source), "-o", str(output),
                          "--beam", str(args.beam), "--batch-size", "32", "--threads", str(args.threads),
                          "--device", args.device],
                         capture_output=True, text=True, check=True)
    found = re.search(r"translated \d+ lines in [\d.]+ s \(([\d.]+) lines/s", run.stderr)
    if not found:
        raise SystemExit(f"error: no speed in translate's log: {run.stderr[-500:]}")
    return output.read_text(encoding="utf-8").splitlines(), float(found.group(1))


def start_server(args, log_path: Path) -> tuple[subprocess.Popen, str]:
    """``nmtkit serve`` on a free loopback port, once it listens: the process and its URL."""
    log = open(log_path, "w")
    server = subprocess.Popen([*NMTKIT, "serve", "-m", f"bench={args.model}", "--port", "0", "--beam", str(args.beam),
                               "--device", args.device,
                               "--threads", str(max(1, args.threads // args.workers)), "--workers", str(args.workers),
                               "--max-batch", str(args.max_batch),
                               "--max-wait-ms", str(args.max_wait_ms), "--queue-size", "1024",
                               *(["--continuous"] if args.continuous else []), *(["--compile"] if args.compile else [])],
                              stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"Uvicorn running on (http://\S+)", log_path.read_text())
        if found:
            return server, found.group(1)
        if server.poll() is not None:
            raise SystemExit(f"error: serve exited {server.returncode}: {log_path.read_text()[-500:]}")
        time.sleep(0.1)
    server.kill()
    raise SystemExit("error: serve did not start in 120 s")


def connect(url: str) -> http.client.HTTPConnection:
    """A keep-alive connection to the server at ``url``. The standard library's client, not httpx: it costs the
    clients a twelfth of the CPU (0.1 s against 1.2 s for 300 requests), which they share with the server."""
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)


def request(connection: http.client.HTTPConnection, method: str, path: str, body: object = None) -> tuple[int, dict]:
    """Send one request (a JSON body, if any) and read its answer: the status and the JSON it carries."""
    connection.request(method, path, None if body is None else json.dumps(body),
                       {"Content-Type": "application/json"} if body is not None else {})
    answer = connection.getresponse()
    return answer.status, json.loads(answer.read())


def health(url: str) -> dict:
    """The server's ``GET /health`` (its counts of batches, lines and decoding time), on a connection of its own."""
    connection = connect(url)
    try:
        return request(connection, "GET", "/health")[1]
    finally:
        connection.close()


def cpu_seconds(pid: int) -> tuple[float, float]:
    """The CPU time (user + system) process ``pid`` has used so far: its own, and with that of the processes it
    started (its decoding workers), read at once so that the two agree when it started none (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    started = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return own, own + sum(cpu_seconds(int(c))[1] for c in started)


def phase(url: str, server_pid: int, lines: list[str], expected: list[str], clients: int, time_limit: float) -> dict:
    """``clients`` threads sending every line once, one line a request; what they measured, with the server's
    batches (mean lines per batch, the time its workers spent decoding, summed, over the phase's) and the CPU
    seconds that the server (with its worker processes; and its own process alone) and the clients used."""
    todo = list(range(len(lines)))[::-1]
    lock = threading.Lock()
    latencies: list[float] = []
    counts = {"answered": 0, "mixed_up": 0, "differs": 0, "errors": 0}
    outputs = set(expected)
    stop_at = time.monotonic() + time_limit

    def client() -> None:
        connection = connect(url)
        try:
            while time.monotonic() < stop_at:
                with lock:
                    if not todo:
                        return
                    i = todo.pop()
                start = time.perf_counter()
                try:
                    status, answer = request(connection, "POST", "/translate", {"text": [lines[i]]})
                    text = answer["translations"][0]["outputs"][0]["text"] if status == 200 else None
                except (OSError, http.client.HTTPException, KeyError, ValueError):
                    text = None
                    connection.close()  # (reopened by the next request)
                took = time.perf_counter() - start
                with lock:
                    if text is None:
                        counts["errors"] += 1
                    else:
                        counts["answered"] += 1
                        latencies.append(took)
                        if text != expected[i]:  # another line's answer, or this line's decoded otherwise
                            counts["mixed_up" if text in outputs else "differs"] += 1
        finally:
            connection.close()

    before, (main_cpu, server_cpu), client_cpu = (health(url), cpu_seconds(server_pid),
                                                  time.process_time())
    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    after, (main_cpu_after, server_cpu_after) = health(url), cpu_seconds(server_pid)
    steps = after["steps"] - before["steps"]  # (continuous batching: its mean batch is a step's)
    if steps:
        mean_batch = (after["step_lines"] - before["step_lines"]) / steps
    else:
        mean_batch = (after["lines"] - before["lines"]) / max(1, after["batches"] - before["batches"])
    return {"clients": clients, **counts, "unsent": len(todo), "seconds": round(seconds, 2),
            "sentences_per_s": round(counts["answered"] / seconds, 2),
            "p50_ms": round(1000 * percentile(latencies, 50), 1), "p99_ms": round(1000 * percentile(latencies, 99), 1),
            "mean_batch": round(mean_batch, 2),
            "decoding": round((after["decoding_s"] - before["decoding_s"]) / seconds, 3),
            "server_cpu_s": round(server_cpu_after - server_cpu, 2),
            "server_main_cpu_s": round(main_cpu_after - main_cpu, 2),
            "client_cpu_s": round(time.process_time() - client_cpu, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True, help="checkpoint")
    parser.add_argument("-i", "--input", required=True, help="sentences, one a line")
    parser.add_argument("--lines", type=int, default=500, help="the first N non-empty lines [default: 500]")
    parser.add_argument("--clients", default="1,4,16", help="concurrent clients of each phase [default: 1,4,16]")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of translate and serve [default: 2]")
    parser.add_argument("--device", default="auto", help="translate's and serve's --device [default: auto]")
    parser.add_argument("--workers", type=int, default=1,
                        help="serve's decoding processes, the threads shared among them [default: 1]")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=5.0)
    parser.add_argument("--continuous", action="store_true",
                        help="serve --continuous: requests join a running beam search (continuous batching)")
    parser.add_argument("--compile", action="store_true",
                        help="serve --compile (compiled before it listens); translate's reference stays uncompiled")
    parser.add_argument("--time-limit", type=float, default=300, help="seconds per phase at most [default: 300]")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    lines = first_lines(args.input, args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        expected, translate_speed = translate_reference(args, lines, work)
        server, url = start_server(args, work / "serve.log")
        try:
            phases = [phase(url, server.pid, lines, expected, int(c), args.time_limit) for c in args.clients.split(",")]
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
    print(f"{len(lines)} sentences, beam {args.beam}, {args.threads} threads, device {args.device} (serve: "
          f"{args.workers} worker(s)"
          f"{', compiled' if args.compile else ''}); "
          f"translate (batch 32): "
          f"{translate_speed:.1f} sentences/s")
    print(f"{'clients':>7} {'sent/s':>8} {'vs translate':>12} {'p50 ms':>8} {'p99 ms':>8} {'answered':>8} "
          f"{'mixed up':>8} {'differs':>7} {'errors':>6} {'unsent':>6} {'batch':>5} {'decoding':>8} "
          f"{'server cpu':>10} {'of it http':>10} {'client cpu':>10}")
    for p in phases:
        p["vs_translate"] = round(p["sentences_per_s"] / translate_speed, 3)
        print(f"{p['clients']:>7} {p['sentences_per_s']:>8.1f} {p['vs_translate']:>12.2f} {p['p50_ms']:>8.1f} "
              f"{p['p99_ms']:>8.1f} {p['answered']:>8} {p['mixed_up']:>8} {p['differs']:>7} {p['errors']:>6} "
              f"{p['unsent']:>6} {p['mean_batch']:>5.1f} {p['decoding']:>8.0%} {p['server_cpu_s']:>9.1f}s "
              f"{p['server_main_cpu_s']:>9.1f}s {p['client_cpu_s']:>9.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps({"sentences": len(lines), "beam": args.beam, "threads": args.threads,
                                               "device": args.device, "continuous": args.continuous,
                                               "workers": args.workers, "compile": args.compile,
                                               "max_batch": args.max_batch, "max_wait_ms": args.max_wait_ms,
                                               "translate_sentences_per_s": round(translate_speed, 2),
                                               "phases": phases}, indent=1) + "\n")
    if any(p["errors"] or p["mixed_up"] or p["unsent"] for p in phases):
        sys.exit(1)


if __name__ == "__main__":
    main()
