"""Tables of results on stdout: rich's, as wide as their columns when stdout is not a terminal (a pipe or a file
keeps every figure whole instead of wrapping at 80 columns)."""
from __future__ import annotations

import sys
from typing import Sequence


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table with ``header``, the first column left-aligned and the others right-aligned; '-' for empty cells.
    Every text is shown as it is (a system named ``rnn[seed1]`` is not rich markup)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title))
    for i, h in enumerate(header):
        table.add_column(Text(h), justify="left" if i == 0 else "right", overflow="fold")  # a number wraps, never cut
    for row in rows:
        table.add_row(*[Text(cell or "-") for cell in row])
    Console(soft_wrap=True, width=None if sys.stdout.isatty() else 1000).print(table)
