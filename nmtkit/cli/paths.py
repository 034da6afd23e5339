"""Which options of a command name files it reads and which name files it writes, and the check, before the
command does any work, that no output names an input, the standard input or another output, and that each output
can be written: the user's files are never overwritten by a slip of ``-o``."""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional

import click

from nmtkit.data.text import STANDARD, check_writable, is_stream
from nmtkit.errors import NmtkitError

#: (the option that names a file, the file; None for the standard input)
Named = tuple[str, Optional[str]]


class ReadFile(click.Path):
    """A file the command reads; with ``stdin``, a missing value or ``-`` means the standard input."""

    def __init__(self, stdin: bool = False, **kwargs):
        super().__init__(dir_okay=False, **kwargs)
        self.stdin = stdin

    def convert(self, value, param, ctx):
        """``-`` as None (the standard input) where the option reads it, else the path."""
        return None if self.stdin and value == "-" else super().convert(value, param, ctx)


class WriteFile(click.Path):
    """A file the command writes (a missing value or ``-``: the standard output); ``stdout=False``: a file that
    cannot be written as a stream (a checkpoint, an HDF5 file), for which ``-``, a pipe or a device is refused."""

    def __init__(self, stdout: bool = True, **kwargs):
        super().__init__(dir_okay=False, **kwargs)
        self.stdout = stdout


class Command(click.Command):
    """A command that checks its outputs against its inputs (:func:`check_outputs`) before it runs. The inputs
    are the values of its :class:`ReadFile` options, and those ``more_inputs`` finds in the parsed parameters (for
    an option that names files within a longer value, e.g. ``compare --sys NAME=FILE,FILE``)."""

    def __init__(self, *args, more_inputs: Optional[Callable[[dict], Iterable[Named]]] = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.more_inputs = more_inputs

    def invoke(self, ctx: click.Context):
        inputs: list[Named] = []
        outputs: list[Named] = []
        to_stdout: list[str] = []  # (the options writing to the standard output)
        for param in self.params:
            if not isinstance(param.type, (ReadFile, WriteFile)):
                continue
            value = ctx.params.get(param.name or "")
            values = list(value) if isinstance(value, (tuple, list)) else [value]
            name = option_name(param)
            if isinstance(param.type, WriteFile):
                streamed = [v for v in values if v is not None and (v == "-" or str(v) in STANDARD or is_stream(v))]
                if not param.type.stdout and streamed:  # (a checkpoint, an HDF5 file: written, then renamed)
                    raise NmtkitError(f"{name} {streamed[0]}: writes a file that is not a stream of text; name a "
                                      "file (not a pipe or a device)", exit_code=2)
                outputs += [(name, v) for v in values if v not in (None, "-") and str(v) not in STANDARD]
                main = isinstance(param, click.Option) and "-o" in param.opts  # (-o: the standard output by default)
                written = [name for v in values if v == "-" or STANDARD.get(str(v)) == 1 or (v is None and main)]
                to_stdout = written + to_stdout if main else to_stdout + written  # (-o named first)
            elif param.type.stdin and values in ([None], ["-"], []):
                inputs.append((name, None))
            else:
                inputs += [(name, v) for v in values if v not in (None, "-")]
        if self.more_inputs is not None:
            inputs += self.more_inputs(ctx.params)
        if len(to_stdout) > 1:
            raise NmtkitError(f"{to_stdout[1]} -: {to_stdout[0]} writes to the standard output too, and the two would "
                              f"mix; give {to_stdout[1]} a file", exit_code=2)
        check_outputs(outputs, inputs)
        return super().invoke(ctx)


def option_name(param: click.Parameter) -> str:
    """How an error names a parameter: its longest flag, or an argument's metavar."""
    if isinstance(param, click.Option) and param.opts:
        return max(param.opts, key=len)
    return param.metavar or (param.name or "").upper()


def check_outputs(outputs: Iterable[Named], inputs: Iterable[Named]) -> None:
    """Refuse, in one line naming the option (exit 2), an output that is one of ``inputs`` (the same file, by
    any name; None: the standard input, where it is a file), that another output names too, that a file stands
    in the way of, or whose folder cannot be written."""
    inputs = list(inputs)
    seen: dict[str, str] = {}
    for option, path in outputs:
        assert path is not None
        target = Path(path)
        for source, given in inputs:
            if _same_file(target, given):
                what = "the standard input" if given is None else f"the file of {source}"
                raise NmtkitError(f"{option} {path}: is {what}; write the output to another file", exit_code=2)
        key = os.path.realpath(target)
        if key in seen:
            raise NmtkitError(f"{option} {path}: {seen[key]} writes this file too; give each output its own file",
                              exit_code=2)
        seen[key] = option
        check_writable(target, option)


def _same_file(output: Path, given: Optional[str]) -> bool:
    """Whether ``output`` is the file ``given`` names (None: the standard input, if it is a regular file)."""
    if not output.exists():
        return False
    if given is None:
        try:
            stdin = os.fstat(sys.stdin.fileno())
        except (AttributeError, OSError, ValueError):  # no standard input, or one without a descriptor
            return False
        out = output.stat()
        return stat.S_ISREG(stdin.st_mode) and (stdin.st_dev, stdin.st_ino) == (out.st_dev, out.st_ino)
    return Path(given).exists() and os.path.samefile(output, given)
