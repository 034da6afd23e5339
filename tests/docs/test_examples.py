"""The doc test harness: every shell example of docs/*.md runs, so the docs cannot drift from the code.

How the pages are written (details in :mod:`tests.docs.markdown`): a shell example is a `````console`` block whose
commands start with ``$ `` and whose other lines are the output the reader should see (``...`` stands for any
text); ``<!-- not run: REASON -->`` on the line before a block exempts it (GPUs, several machines, downloads of
real data), ``<!-- file: PATH -->`` makes a block a file the examples use. Any other shell-looking block fails
:func:`test_every_block_keeps_the_conventions`, so nothing is skipped silently; the blocks not run are listed and
counted at the end of every pytest run that collects this module.

How they run:

- One work folder for the whole guide, the pages in mkdocs.yml's reading order (then pages not in the nav yet):
  the quick start makes the tiny corpus and model (``text/``, ``data-bin/``, ``model/``) that later pages use, as a
  reader who follows the guide would. A page's test first runs the pages before it (once per session), so
  ``-k translate`` works alone.
- Each page's console blocks run in one bash (``set -o pipefail``), so ``export`` and files carry over from block
  to block; a command must exit with 0 and print the output lines its block shows.
- ``nmtkit`` is the command line of this checkout, served by :mod:`tests.nmtkit_server` (torch is imported
  once, not per command). The one substitution: every ``nmtkit train`` gets
  :data:`tests.nmtkit_server.TRAIN_LIMITS` appended (``--max-steps 4 --valid-every 2 --valid-max-sentences 4
  --save-every 0``; the last value of an option wins), so that training examples written for real runs
  (``--max-time 60``) stop after four updates. Nothing else is rewritten: ``python -m nmtkit`` under ``torchrun``
  runs as written, so such an example must be cheap itself (distributed.md's has ``--max-steps 6``).
- ``OMP_NUM_THREADS=1``: the commands take about 40 s of CPU time (``NMTKIT_DOCS_CPU=FILE`` makes the server write
  the CPU seconds its commands used to FILE).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.markdown import ROOT, Block, Command, all_pages, blocks, page_blocks, problems
from tests.nmtkit_server import TRAIN_LIMITS, NmtkitServer

PAGES = all_pages()
RUN_TIMEOUT = 300  # seconds for one page


def test_every_block_keeps_the_conventions():
    found = [p for page in PAGES for b in page_blocks(page) for p in problems(b)]
    assert not found, "\n".join(found)


def test_the_harness_finds_the_examples():
    console = [b for page in PAGES for b in page_blocks(page) if b.lang == "console"]
    assert len([b for b in console if not b.not_run]) >= 20
    assert all(Path(ROOT / p).is_file() for p in PAGES)


class Guide:
    """The shared work folder, the nmtkit server, and which pages have run."""

    def __init__(self, tmp: Path):
        self.work = tmp / "work"
        self.work.mkdir()
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.server = NmtkitServer(tmp, tuple(TRAIN_LIMITS), env)
        self.bin = self.server.bin
        # the examples' python and torchrun are this interpreter's; their nmtkit is the server's
        path = os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), os.environ["PATH"]])
        self.env = {**env, "PATH": path, "HOME": str(tmp),
                    "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
        self.results: dict[str, str] = {}  # page -> "" (passed) or why it failed

    def close(self) -> None:
        self.server.close()

    def run_through(self, page: str) -> str:
        """Run the pages up to ``page`` that have not run; why ``page`` failed ("" if it passed)."""
        for earlier in PAGES[:PAGES.index(page) + 1]:
            if earlier not in self.results:
                failed = next((p for p, why in self.results.items() if why), None)
                self.results[earlier] = (f"not run: {failed}, before it in the guide, failed" if failed
                                         else self._run_page(earlier))
        return self.results[page]

    def _run_page(self, page: str) -> str:
        found = page_blocks(page)
        for b in found:
            if b.file:
                path = self.work / b.file
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text("\n".join(b.body) + "\n", encoding="utf-8")
        commands = [(b, c) for b in found if b.lang == "console" and not b.not_run for c in b.commands()]
        if not commands:
            return ""
        out = self.work.parent / "out" / Path(page).stem
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        script = ["set -o pipefail", f"cd {quote(self.work)}"]
        for i, (_, c) in enumerate(commands):
            script += [f"{{ {c.text}", f"}} >{quote(out / str(i))} 2>&1 </dev/null",
                       f"rc=$?; echo $rc >{quote(out / f'{i}.rc')}; [ $rc = 0 ] || exit $rc"]
        try:
            subprocess.run(["bash", "-c", "\n".join(script)], env=self.env, timeout=RUN_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return f"{page}: its examples took more than {RUN_TIMEOUT} s"
        for i, (_, command) in enumerate(commands):
            rc_file = out / f"{i}.rc"
            if not rc_file.exists():
                return f"{page}:{command.line}: not run (an earlier command stopped the page)"
            text = (out / str(i)).read_text(encoding="utf-8", errors="replace")
            rc = int(rc_file.read_text())
            if rc != 0:
                return f"{page}:{command.line}: exit code {rc}\n$ {command.text}\n{text}"
            missing = missing_output(command, text)
            if missing:
                return (f"{page}:{command.line}: the output shown in the page does not appear:\n  {missing}\n"
                        f"$ {command.text}\n{text}")
        return ""


def quote(path: Path) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


def pattern(expected: str) -> re.Pattern:
    """An output line shown in a page as a regular expression: ``...`` is any text, spaces may differ."""
    parts = [r"\s+".join(map(re.escape, piece.split())) for piece in expected.strip().split("...")]
    return re.compile(".*".join(parts))


def missing_output(command: Command, output: str) -> str:
    """The first line shown after ``command`` that its output lacks, in order ("" if none)."""
    lines = output.splitlines()
    at = 0
    for expected in command.expected:
        regex = pattern(expected)
        while at < len(lines) and not regex.search(lines[at]):
            at += 1
        if at == len(lines):
            return expected
        at += 1
    return ""


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    g = Guide(tmp_path_factory.mktemp("docs"))
    yield g
    g.close()


@pytest.mark.parametrize("page", PAGES)
def test_page_examples_run(guide, page):
    why = guide.run_through(page)
    assert not why, why


def not_run_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(ROOT / page) if b.lang == "console" and b.not_run]
