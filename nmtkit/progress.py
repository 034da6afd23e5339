"""Progress bars and log lines on stderr (rich), quiet when stderr is not a terminal."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True, highlight=False, emoji=False)  # (":100:" in a line number is no emoji)


def progress(transient: bool = True) -> Progress:
    """A progress display on stderr; disabled (no output) when stderr is not a terminal. Descriptions are shown
    as they are (a file name is not rich markup)."""
    return Progress(
        TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[info]}", markup=False), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        console=console, transient=transient, disable=not sys.stderr.isatty(),
    )


def log(message: str) -> None:
    """One line on stderr (above any live progress bar)."""
    console.print(message, markup=False, soft_wrap=True)


def warn(message: str) -> None:
    console.print(f"warning: {message}", markup=False, soft_wrap=True, style="yellow")


#: how many lines of one kind (cut, unusable) a warning names one by one, before they are only counted
NAMED_LINES = 10


def warn_line(before: int, message: str, kind: str) -> None:
    """The warning ``message`` naming a line, where ``before`` lines of its ``kind`` came before it and fewer than
    :data:`NAMED_LINES`; at the next, one line saying that the others are counted, not named (100,000 lines cut
    were 100,000 lines of log)."""
    if before < NAMED_LINES:
        warn(message)
    elif before == NAMED_LINES:
        warn(f"{kind}: more than {NAMED_LINES}; the others are counted, not named (the count comes at the end)")
