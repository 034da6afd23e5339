"""The ``nmtkit`` command: one thin module per subcommand."""
from __future__ import annotations

import errno
import fcntl
import importlib
import os
import signal
import sys
import threading
from typing import Iterator

import click

from nmtkit import __version__
from nmtkit.errors import NmtkitError, Terminated, is_disk_full, writing


def _terminate(signum, frame) -> None:
    raise Terminated()


def usage_line(e: click.UsageError) -> str:
    """A command-line error in one line naming the option, e.g. "--beam: expects an integer in [1, 1000], got '0'
    (see 'nmtkit translate --help')"."""
    if isinstance(e, click.BadParameter) and e.param is not None and not isinstance(e, click.MissingParameter):
        name = max(e.param.opts, key=len) if e.param.opts else e.param.name
        text = f"{name}: {e.message}"
    else:
        text = e.format_message()
    where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
    return " ".join(text.split()) + where


def _let_go_of_stdout() -> None:
    """After a failure, point stdout at /dev/null if it cannot take what is buffered (a full disk, a closed pipe),
    so that the interpreter's own flush at exit does not fail a second time."""
    try:
        sys.stdout.flush()
    except OSError:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass


class ClosedStream:
    """``sys.stdin`` or ``sys.stdout`` of a process started with it closed (``<&-``, ``>&-``): reading or writing it
    is one line saying so (exit 1); it is no terminal, and flushing it does nothing."""

    def __init__(self, name: str, started: str):
        self.what, self.started = name, started

    def isatty(self) -> bool:
        return False

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"{self.what} is closed")

    def __getattr__(self, name: str):
        raise StreamClosed(f"{self.what} is closed (the command was started with {self.started}): give it a file")


class StreamClosed(NmtkitError, AttributeError):
    """Reading or writing a :class:`ClosedStream`; an AttributeError too, so that a library probing the stream's
    attributes (``getattr(stream, "encoding", None)``) finds none, and fails only where it reads or writes."""


def _stand_in_for_closed_streams() -> None:
    """Give /dev/null to each standard descriptor the process was started without (so that no file a command opens
    takes its number, and what a library writes to descriptor 2 never lands in an output); the standard error then
    writes nowhere (the outputs are written all the same), and reading the standard input or writing the standard
    output is one line (:class:`ClosedStream`)."""
    for fd, name, what, started in ((0, "stdin", "the standard input", "<&-"),
                                    (1, "stdout", "the standard output", ">&-"), (2, "stderr", "", "2>&-")):
        try:  # (an output's descriptor read-only: a file the loader opened where the closed one was, not ours)
            usable = fd == 0 or fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
        except OSError:  # (closed)
            os.open(os.devnull, os.O_RDWR)  # (the lowest free descriptor: this one, as those below it are open)
            usable = False
        if not usable or getattr(sys, name) is None:  # (None: Python found the descriptor closed as it started)
            setattr(sys, name, open(os.devnull, "w") if fd == 2 else ClosedStream(what, started))


class Group(click.Group):
    """A click group that turns NmtkitError into ``error: ...`` on stderr and its exit code, a full disk or another
    error of the file system into one such line, and SIGINT and SIGTERM into exceptions, so that every command
    removes its temporary files before it exits."""

    def main(self, *args, **kwargs):
        _stand_in_for_closed_streams()  # (first, before any file is opened)
        try:
            return super().main(*args, **kwargs)
        except StreamClosed as e:  # (before a command runs: --help or --version written to a closed stdout)
            click.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)

    def invoke(self, ctx: click.Context):
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
        try:
            result = super().invoke(ctx)
            with writing("<stdout>"):
                sys.stdout.flush()
            return result
        except NmtkitError as e:
            _let_go_of_stdout()
            click.echo(f"error: {e}", err=True)
            sys.exit(e.exit_code)
        except BrokenPipeError:
            _let_go_of_stdout()
            sys.exit(141)
        except OSError as e:
            _let_go_of_stdout()
            if is_disk_full(e):
                # files are written within errors.writing(FILE), which names them; what is left is stdout (click.echo)
                click.echo(f"error: no space left on device while writing {e.filename or '<stdout>'}", err=True)
            else:  # e.g. a file that cannot be read or written: one line naming it
                click.echo(f"error: {e.filename}: {e.strerror}" if e.filename and e.strerror else f"error: {e}",
                           err=True)
            sys.exit(1)
        except click.UsageError as e:
            click.echo(f"error: {usage_line(e)}", err=True)
            sys.exit(e.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Terminated:
            click.echo("terminated", err=True)
            sys.exit(143)
        finally:
            if main_thread:
                signal.signal(signal.SIGTERM, previous)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nmtkit")
def main() -> None:
    """Neural machine translation and captioning with attention.

    Text goes in on stdin and out on stdout, one output line per input line; logs and
    progress go to stderr. Run 'nmtkit COMMAND --help' for each command.
    """


class LazyCommands(dict):
    """The subcommands by name, each module imported when its command is first asked for: ``nmtkit score`` does
    not pay for importing torch, which only the commands that run models need."""

    def __init__(self, modules: dict[str, str]):
        super().__init__()
        self.modules = modules

    def __missing__(self, name: str) -> click.Command:
        self[name] = importlib.import_module(f"nmtkit.cli.{self.modules[name]}").command
        return self[name]

    def get(self, name, default=None):
        return self[name] if name in self else default

    def __contains__(self, name) -> bool:
        return name in self.modules or dict.__contains__(self, name)

    def __iter__(self) -> Iterator[str]:  # the lazy ones, then any added with add_command
        return iter(dict.fromkeys([*self.modules, *dict.keys(self)]))

    def __len__(self) -> int:
        return len(list(iter(self)))

    def keys(self):
        return list(self)

    def items(self):
        return [(name, self[name]) for name in self]

    def values(self):
        return [self[name] for name in self]


main.commands = LazyCommands({name: name.replace("-", "_") for name in (
    "preprocess", "check-corpus", "train", "average", "translate", "caption", "export", "score", "compare", "replace-unk",
    "bucket-bleu", "plot-attn", "align", "demo-corpus", "serve")})
