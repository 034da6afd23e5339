"""nmtkit serve end to end: a server process on a loopback port translates, and stops on SIGTERM once the request
in flight is answered; models are named on the command line."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from nmtkit.cli.serve import named_models
from nmtkit.errors import NmtkitError
from tests.conftest import run
from tests.serve.test_app import free_port


def start(*args) -> tuple[subprocess.Popen, str]:
    """``nmtkit serve ARGS`` on a free port, once it answers /health: the process and its URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "nmtkit", "serve", "--port", str(port), *map(str, args)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # (--compile compiles before the server listens)
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"serve exited {server.returncode}: {server.stdout.read()}")
        try:
            httpx.get(f"{url}/health", timeout=1)
            return server, url
        except httpx.TransportError:
            time.sleep(0.1)
    server.kill()
    raise AssertionError("serve did not answer in 120 s")


def workers_of(pid: int) -> list[int]:
    """The decoding processes ``pid`` started (Linux /proc; not multiprocessing's resource tracker)."""
    started = [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    return [c for c in started if b"spawn_main" in open(f"/proc/{c}/cmdline", "rb").read()]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("batching", [[], ["--continuous"], ["--workers", 2], ["--compile"]])
def test_serve_translates_and_finishes_the_request_in_flight_on_sigterm(trained_ckpt, tmp_path, batching):
    cli = run(["translate", "-m", trained_ckpt], input="forty-two\none\n").stdout.splitlines()
    model = tmp_path / "de"
    model.mkdir()
    shutil.copy(trained_ckpt, model / "best.pt")
    threads = [] if batching[:1] == ["--workers"] else ["--threads", 1]  # (the workers share PyTorch's default)
    server, url = start("-m", model / "best.pt", *threads, *batching)
    try:
        assert [m["name"] for m in httpx.get(f"{url}/models").json()["models"]] == ["de"]
        r = httpx.post(f"{url}/translate", json={"text": ["forty-two", "one"]})
        assert [t["outputs"][0]["text"] for t in r.json()["translations"]] == cli
        workers, processes = workers_of(server.pid), 2 if batching[:1] == ["--workers"] else 0
        assert len(workers) == processes and httpx.get(f"{url}/health").json()["workers"] == max(processes, 1)
        lines = ["seven hundred forty-two thousand"] * 200  # a request that takes a while
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(httpx.post, f"{url}/translate", json={"text": lines, "beam": 8}, timeout=120)
            while httpx.get(f"{url}/health").json()["in_flight"] == 0:
                time.sleep(0.01)
            server.send_signal(signal.SIGTERM)
            answer = pending.result(120)
        assert answer.status_code == 200 and len(answer.json()["translations"]) == 200
        log = server.communicate(timeout=60)[0]
    finally:
        server.kill()
    assert "Finished server process" in log and server.returncode in (0, 143), log
    assert ("decoding step compiled in" in log) == ("--compile" in batching)
    if not threads:
        default = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        assert f"2 decoding processes of {max(1, int(default) // 2)} thread(s) each" in log
    assert not [pid for pid in workers if alive(pid)]


def test_models_are_named_by_folder_or_given_name_and_several_checkpoints_ensemble(tmp_path):
    for folder in ("de", "fr"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "best.pt").write_bytes(b"")
    de, fr = tmp_path / "de" / "best.pt", tmp_path / "fr" / "best.pt"
    assert named_models((str(de), f"x={fr}", f"both={de},{fr}")) == \
        {"de": (str(de),), "x": (str(fr),), "both": (str(de), str(fr))}
    with pytest.raises(NmtkitError, match="a second model named 'de'"):
        named_models((str(de), f"de={fr}"))
    with pytest.raises(NmtkitError, match="give a checkpoint"):
        named_models(("x=,",))


def test_serve_errors_are_one_line(trained_ckpt, tmp_path):
    r = run(["serve", "-m", tmp_path / "missing.pt", "--port", free_port()], ok=False)
    assert r.stderr.startswith("error: ") and "missing.pt" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run(["serve", "-m", trained_ckpt, "--continuous", "--workers", 2], ok=False)
    assert r.stderr == "error: --continuous: one search runs in one process; give --workers 1\n" and r.exit_code == 2
    r = run(["serve", "-m", trained_ckpt, "-m", trained_ckpt, "--port", free_port()], ok=False)
    assert r.exit_code == 2 and "a second model named" in r.stderr
    with socket.socket() as taken:  # (said before the models load)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = run(["serve", "-m", trained_ckpt, "--port", port], ok=False)
    assert r.exit_code == 2 and r.stderr == f"error: --host/--port: cannot serve on 127.0.0.1:{port} (Address already in use)\n"


def test_serve_refuses_a_model_that_reads_images(tmp_path):
    """A request would name image files on the server's disk (and an unreadable one got an empty translation, said
    only in the server's log): serve takes text models alone."""
    from tests.data.test_multimodal import trained_multimodal

    root = trained_multimodal(tmp_path, "--max-steps", 2, "--valid-every", 2)
    r = run(["serve", "-m", f"mm={root / 'run' / 'last.pt'}", "--port", free_port()], ok=False)
    assert r.exit_code == 2 and r.stderr == (
        f"error: -m mm: {root / 'run' / 'last.pt'} is a multi-source model reading image (inputs: src, image); serve "
        "takes text alone, since a request would name files on the server's disk: use 'nmtkit translate' or "
        "'nmtkit caption'\n")
