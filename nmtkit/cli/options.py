"""click options generated from :class:`nmtkit.config.Option` lists."""
from __future__ import annotations

from typing import Callable, Sequence

import click

from nmtkit.config import Option


def click_options(options: Sequence[Option]) -> list[click.Option]:
    """One ``--key-name`` click option per config key (default None: 'not given'), in order."""
    made = []
    for o in options:
        default = f" [default: {o.default}]" if o.default not in ("", None) else ""
        if o.kind is bool:
            made.append(click.Option([f"{o.flag}/--no-{o.flag[2:]}", o.name], default=None, help=o.help + default))
        else:
            kind = click.Choice(list(o.choices)) if o.choices else o.kind
            made.append(click.Option([o.flag, o.name], type=kind, default=None, help=o.help + default))
    return made


def config_options(options: Sequence[Option]) -> Callable:
    """Decorator adding :func:`click_options` to a command."""

    def decorate(f: Callable) -> Callable:
        f.__click_params__ = getattr(f, "__click_params__", []) + click_options(options)[::-1]  # type: ignore
        return f

    return decorate
