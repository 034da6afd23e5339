"""Options with defaults and help, resolved from defaults < YAML file < command line.

A command's options (for ``train``: the training options and the chosen architecture's own)
live in one flat namespace, as in OpenNMT-py, so any key of a YAML config can be given on the
command line as ``--key-name VALUE`` and vice versa.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

import yaml

from nmtkit.errors import NmtkitError


@dataclass(frozen=True)
class Option:
    """One configuration key: name (snake_case), default, help text, and optional choices."""

    name: str
    default: Any
    help: str
    choices: Optional[Sequence[str]] = None
    type: Optional[builtins.type] = None  # defaults to the type of ``default``

    @property
    def kind(self) -> builtins.type:
        return self.type or type(self.default)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def coerce(self, value: Any, where: str) -> Any:
        """Convert ``value`` to this option's type; raise naming ``where`` and the key if impossible."""
        if value is None:
            return None
        kind = self.kind
        try:
            if kind is bool:
                if isinstance(value, str):
                    if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                        raise ValueError(value)
                    value = value.lower() in ("true", "yes", "1")
                out = bool(value)
            elif kind is int and isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            else:
                out = kind(value)
        except (TypeError, ValueError):
            raise NmtkitError(f"{where}: '{self.name}' expects a {kind.__name__}, got {value!r}", exit_code=2) from None
        if self.choices and out not in self.choices:
            raise NmtkitError(f"{where}: '{self.name}' must be one of {', '.join(self.choices)}, got {out!r}",
                              exit_code=2)
        return out


def read_yaml(path: Path) -> dict:
    """Read a YAML mapping; nested sections are flattened (their keys join the flat namespace)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise NmtkitError(f"{path}: no such config file", exit_code=2) from None
    except yaml.YAMLError as e:
        raise NmtkitError(f"{path}: invalid YAML ({str(e).splitlines()[0]})", exit_code=2) from None
    if not isinstance(data, dict):
        raise NmtkitError(f"{path}: a config must be a mapping of keys to values", exit_code=2)
    flat: dict = {}

    def walk(d: Mapping) -> None:
        for k, v in d.items():
            if isinstance(v, dict):
                walk(v)
            else:
                flat[str(k).replace("-", "_")] = v

    walk(data)
    return flat


def resolve(options: Iterable[Option], file_values: Mapping[str, Any], cli_values: Mapping[str, Any],
            file_name: str = "config", explain: Optional[Callable[[list[str]], str]] = None) -> dict:
    """Merge defaults, file values and command-line values (later wins); reject unknown file keys
    (``explain`` gives the message's hint for them)."""
    by_name = {o.name: o for o in options}
    unknown = sorted(set(file_values) - set(by_name))
    if unknown:
        hint = explain(unknown) if explain else "see 'nmtkit train --help'"
        raise NmtkitError(f"{file_name}: unknown key(s) {', '.join(unknown)} ({hint})", exit_code=2)
    config = {name: o.default for name, o in by_name.items()}
    for k, v in file_values.items():
        config[k] = by_name[k].coerce(v, file_name)
    for k, v in cli_values.items():
        if v is not None and k in by_name:
            config[k] = by_name[k].coerce(v, by_name[k].flag)
    return config
