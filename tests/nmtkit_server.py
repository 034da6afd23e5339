"""The tests' ``nmtkit`` for shell scripts (the docs' examples, the recipes): one server process imports nmtkit (and
torch) once, and every ``nmtkit ...`` that a script runs is a small client that hands the server its arguments,
environment, folder and standard streams; the server forks a child that runs nmtkit's real command line
(``nmtkit.cli.main``) on them, with those streams as its file descriptors 0, 1 and 2, and sends back its exit code.
A command costs milliseconds instead of the two seconds of importing torch, with pipes, redirections and exit codes
as in a shell.

:class:`NmtkitServer` starts one and writes the client as ``BIN/nmtkit``; put BIN first on the scripts' PATH.
Run alone as ``python -m tests.nmtkit_server SOCKET [OPTION...]`` (it prints ``ready`` once it listens): the OPTIONs
are appended to every ``nmtkit train`` (the last value of an option wins), which the doc harness uses to stop every
training example after a few updates (:data:`TRAIN_LIMITS`).
"""
from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import traceback
from pathlib import Path

#: what the doc harness appends to every ``nmtkit train``: a few updates, one validation on a few sentences
TRAIN_LIMITS = ["--max-steps", "4", "--valid-every", "2", "--valid-max-sentences", "4", "--save-every", "0"]


class NmtkitServer:
    """A running server and its client, ``bin/nmtkit``, in ``folder``; ``train_args`` go after every train."""

    def __init__(self, folder: Path, train_args: tuple[str, ...] = (), env: dict | None = None):
        self.bin = folder / "bin"
        self.bin.mkdir(parents=True)
        socket_path = str(folder / "nmtkit.sock")
        self.process = subprocess.Popen([sys.executable, "-m", "tests.nmtkit_server", socket_path, *train_args],
                                        cwd=Path(__file__).parents[1], env=env, stdout=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, text=True)
        ready = self.process.stdout.readline().strip() if self.process.stdout else ""
        assert ready == "ready", f"the nmtkit server did not start ({ready!r})"
        client = self.bin / "nmtkit"
        client.write_text(client_script(socket_path))
        client.chmod(0o755)

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def client_script(server: str) -> str:
    """The source of the ``nmtkit`` executable that talks to the server listening at ``server``."""
    return f"""#!{sys.executable} -IS
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect({server!r})
data = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
socket.send_fds(s, [len(data).to_bytes(8, "big") + data], [0, 1, 2])
reply = b""
while True:
    chunk = s.recv(64)
    if not chunk:
        break
    reply += chunk
sys.exit(int(reply) if reply.strip() else 1)
"""


def _request(conn: socket.socket) -> tuple[dict, list[int]]:
    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    size, data = int.from_bytes(message[:8], "big"), message[8:]
    while len(data) < size:
        chunk = conn.recv(1 << 20)
        if not chunk:
            raise EOFError("the client went away")
        data += chunk
    return json.loads(data), fds


def _child(conn: socket.socket, train_args: list[str]) -> None:
    """Run one command in this forked process, send its exit code and exit."""
    code = 1
    try:
        request, fds = _request(conn)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[:0] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        args = list(request["argv"])
        if args[:1] == ["train"] and not {"-h", "--help"} & set(args):
            args += train_args
        from nmtkit.cli import main

        try:
            main.main(args=args, prog_name="nmtkit")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        try:
            conn.sendall(str(code).encode())
        finally:
            os._exit(code)


def _reap(signum, frame) -> None:
    """Collect finished children (so that their CPU time counts in RUSAGE_CHILDREN)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _stop(signum, frame) -> None:
    """On SIGTERM: if NMTKIT_DOCS_CPU names a file, write the CPU seconds the commands used to it; exit."""
    report = os.environ.get("NMTKIT_DOCS_CPU")
    if report:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(report, "w") as f:
            f.write(f"{usage.ru_utime + usage.ru_stime:.1f}\n")
    os._exit(0)


def serve(path: str, train_args: list[str]) -> None:
    # what the commands import, once: torch, h5py, sacrebleu, sentencepiece, matplotlib and nmtkit's modules
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    import nmtkit.cli  # noqa: F401
    import nmtkit.data.preprocess  # noqa: F401
    import nmtkit.inference  # noqa: F401
    import nmtkit.metrics.text  # noqa: F401
    import nmtkit.models  # noqa: F401
    import nmtkit.search.translator  # noqa: F401
    import nmtkit.tools.bucket_bleu  # noqa: F401
    import nmtkit.tools.plot_attention  # noqa: F401
    import nmtkit.train.trainer  # noqa: F401

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGTERM, _stop)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            _child(conn, train_args)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
