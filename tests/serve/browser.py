"""A headless Chromium driven over the DevTools protocol through a pipe (``--remote-debugging-pipe``: commands in on
file descriptor 3, answers out on 4, each a JSON message ended by a NUL byte), so that a test can load a page, run
JavaScript in it and read what it shows, with no driver library and no network."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from typing import Any, Optional


def chromium_path() -> Optional[str]:
    """The Chromium (or Chrome) on PATH, if any."""
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)


class Browser:
    """One headless browser with one page open at ``url``."""

    def __init__(self, url: str, executable: str):
        self.profile = tempfile.mkdtemp(prefix="nmtkit-chromium-")
        commands_r, self._commands = os.pipe()
        self._answers, answers_w = os.pipe()

        def descriptors() -> None:  # the child's fd 3 reads commands, fd 4 writes answers
            os.dup2(commands_r, 3)
            os.dup2(answers_w, 4)

        self.process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=descriptors, close_fds=False)
        os.close(commands_r)
        os.close(answers_w)
        self._buffer, self._id = b"", 0
        target = self.call("Target.createTarget", url=url)["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def call(self, method: str, session: Optional[str] = None, **params: Any) -> dict:
        """Send one command and return its result (events that arrive meanwhile are dropped)."""
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._answers, 1 << 16)
                if not chunk:
                    raise RuntimeError("the browser closed its pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call("Runtime.evaluate", self.session, expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30) -> Any:
        """Poll a JavaScript expression until it is truthy (it may throw meanwhile: the page is loading); its
        value."""
        deadline, last = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError as e:
                value, last = None, e
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"{expression} stayed false for {timeout} s (last error: {last})")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(30)
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)
