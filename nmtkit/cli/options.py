"""click options generated from :class:`nmtkit.config.Option` lists."""
from __future__ import annotations

from typing import Callable, Sequence

import click

from nmtkit.config import Option


def config_options(options: Sequence[Option]) -> Callable:
    """Decorator adding one ``--key-name`` option per config key (default None: 'not given')."""

    def decorate(f: Callable) -> Callable:
        for o in reversed(options):
            default = f" [default: {o.default}]" if o.default not in ("", None) else ""
            if o.kind is bool:
                f = click.option(f"{o.flag}/--no-{o.flag[2:]}", o.name, default=None, help=o.help + default)(f)
            else:
                kind = click.Choice(list(o.choices)) if o.choices else o.kind
                f = click.option(o.flag, o.name, type=kind, default=None, help=o.help + default)(f)
        return f

    return decorate
