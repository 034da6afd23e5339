"""Options with defaults and help, resolved from defaults < YAML file < command line.

A command's options (for ``train``: the training options and the chosen architecture's own)
live in one flat namespace, as in OpenNMT-py, so any key of a YAML config can be given on the
command line as ``--key-name VALUE`` and vice versa.
"""
from __future__ import annotations

import builtins
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping, Optional, Sequence, Union

import yaml

from nmtkit.errors import NmtkitError


@dataclass(frozen=True)
class Range:
    """The numbers an option allows: ``low`` and ``high`` bounds (None: unbounded), each inclusive unless open.
    NaN and infinities are never allowed."""

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, x: float) -> bool:
        if isinstance(x, float) and not math.isfinite(x):
            return False
        if self.low is not None and (x <= self.low if self.low_open else x < self.low):
            return False
        return self.high is None or (x < self.high if self.high_open else x <= self.high)

    def short(self) -> str:
        """The range in a few characters, for metavars: '>=1', '[0,1)'."""
        return str(self).replace("in ", "").replace(" ", "")

    def __str__(self) -> str:
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {low}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {high}"
        return "finite"


def _number(x: Optional[float]) -> str:
    """A bound as written: whole numbers in full (4294967295, not 4.29497e+09)."""
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class Pattern:
    """The strings an option allows: those matching ``regex`` in full; ``description`` says which, for messages;
    ``metavar`` shows their form in ``--help`` (e.g. ``A:B``; '': TEXT)."""

    regex: str
    description: str
    metavar: str = ""

    def __contains__(self, x: str) -> bool:
        return re.fullmatch(self.regex, x) is not None

    def __str__(self) -> str:
        return self.description


Allowed = Union[Range, Pattern]


def at_least(low: float) -> Range:
    return Range(low=low)


#: Ranges most options use.
POSITIVE = at_least(1)  # sizes and counts of at least one
COUNT = at_least(0)  # counts where 0 means none or no limit
ANY = Range()  # any finite number
PROBABILITY = Range(0, 1, high_open=True)  # dropout, smoothing: in [0, 1)
ABOVE_ZERO = Range(0, low_open=True)  # learning rates
BEAM = Range(1, 1000)  # beam sizes: a beam wider than this would run for hours
LENGTH_A = Range(0, 100)  # output length limit a·|x| + b
LENGTH_B = Range(0, 10_000)
LENGTH_PENALTY = Range(0, 10)  # length^alpha overflows for large alpha
THREADS = Range(0, 1024)
DEVICE = Pattern(r"auto|cpu|mps|cuda(:[0-9]+)?", "auto, cpu, mps, cuda or cuda:N", "DEVICE")
#: what each numeric field of :class:`nmtkit.decoding.DecodeSettings` allows, by name, and its kind: the options of
#: its name (``--beam``, ...) of ``translate``, ``caption`` and ``serve`` check the same (and a request's beam and
#: n_best in ``serve``, BEAM)
DECODING: dict[str, tuple[builtins.type, Range]] = {
    "beam": (int, BEAM), "n_best": (int, BEAM), "length_penalty": (float, LENGTH_PENALTY),
    "batch_size": (int, POSITIVE), "max_len_a": (float, LENGTH_A), "max_len_b": (int, LENGTH_B),
    "max_input_len": (int, POSITIVE), "attention_model": (int, POSITIVE), "attention_layer": (int, POSITIVE),
    "attention_head": (int, POSITIVE), "sampling_topk": (int, COUNT), "temperature": (float, Range(0, 100, low_open=True)),
    "seed": (int, Range(0, 2**63 - 1)), "threads": (int, THREADS), "shortlist_first": (int, COUNT),
    "shortlist_best": (int, POSITIVE), "edit_cost": (float, Range(0)),
}


def expect(kind: builtins.type, allowed: Optional[Allowed] = None, choices: Optional[Sequence[str]] = None) -> str:
    """What an option expects, for messages: 'an integer >= 1', 'a number in [0, 1)', 'one of a, b'."""
    if choices:
        return "one of " + ", ".join(map(str, choices))
    if isinstance(allowed, Pattern):
        return str(allowed)
    noun = {int: "an integer", float: "a number", bool: "true or false", str: "text"}.get(kind, f"a {kind.__name__}")
    return f"{noun} {allowed}" if allowed is not None else noun


def convert(value: Any, kind: builtins.type, allowed: Optional[Allowed] = None,
            choices: Optional[Sequence[str]] = None) -> Any:
    """``value`` as ``kind`` within ``allowed`` and ``choices``; ValueError if it is not."""
    if kind is bool:
        if isinstance(value, str):
            if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                raise ValueError(value)
            return value.lower() in ("true", "yes", "1")
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise ValueError(value)
        return bool(value)
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(value)
    if kind in (int, float) and isinstance(value, bool):
        raise ValueError(value)
    if kind is str and not isinstance(value, str):  # (a YAML list or number: its str() would be taken as text)
        raise ValueError(value)
    out = kind(value)
    if kind in (int, float) and allowed is None:
        allowed = ANY
    if allowed is not None and out not in allowed:
        raise ValueError(value)
    if choices and out not in choices:
        raise ValueError(value)
    return out


@dataclass(frozen=True)
class Option:
    """One configuration key: name (snake_case), default, help text, its ``choices`` or the values it ``allows``
    (a :class:`Range`, required for numbers, or a :class:`Pattern`). A default of None means "not given"
    (the help says what happens then); a value the user gives is never replaced by a default."""

    name: str
    default: Any
    help: str
    choices: Optional[Sequence[str]] = None
    type: Optional[builtins.type] = None  # defaults to the type of ``default``
    allows: Optional[Allowed] = None
    training_only: bool = False  # shapes how a model trains (dropout, initialisation), not what it computes after
    metavar: str = ""  # its value's form in --help (DIR, NAME; '': from its type)

    def __post_init__(self) -> None:
        if self.default is None and self.type is None:
            raise ValueError(f"option {self.name!r}: a default of None needs a type")
        if self.kind in (int, float) and not isinstance(self.allows, Range):
            raise ValueError(f"option {self.name!r}: numbers need a declared range")

    @property
    def kind(self) -> builtins.type:
        return self.type or type(self.default)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def expects(self) -> str:
        return expect(self.kind, self.allows, self.choices)

    def coerce(self, value: Any, where: str) -> Any:
        """Convert ``value`` to this option's type and check its range; raise naming ``where`` and the key if
        impossible."""
        try:
            if value is None:
                if self.default is None:
                    return None
                raise ValueError(value)
            return convert(value, self.kind, self.allows, self.choices)
        except (TypeError, ValueError, OverflowError):
            raise NmtkitError(f"{where}: '{self.name}' expects {self.expects}, got {value!r}", exit_code=2) from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last without a word), and
    noting the lines each key is on (``key_lines``, keys as options name them: emb-size is emb_size)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.key_lines: dict[str, list[int]] = {}

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} is given twice",
                                                        key_node.start_mark)
            seen.add(key)
            self.key_lines.setdefault(str(key).replace("-", "_"), []).append(key_node.start_mark.line + 1)
        return super().construct_mapping(node, deep)


# YAML 1.1 reads 1:2 as the base-60 number 62: a value of the form A:B (--profile) stays text, as YAML 1.2 has it
_INT = "tag:yaml.org,2002:int"
_UniqueKeyLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _INT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_UniqueKeyLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"))


class FileValues(dict):
    """A config file's keys and values, knowing the ``line`` each key is on, so that messages can name it."""

    def __init__(self, values: Mapping[str, Any], lines: Mapping[str, int]) -> None:
        super().__init__(values)
        self.lines = dict(lines)

    def where(self, key: str, file_name: str) -> str:
        """``file_name:LINE`` of ``key``, for messages (``file_name`` alone where the line is not known)."""
        return f"{file_name}:{self.lines[key]}" if key in self.lines else file_name


def read_yaml(path: Path, values: Collection[str] = ()) -> FileValues:
    """Read a YAML mapping; nested sections are flattened (their keys join the flat namespace, each key once). A
    mapping under one of the keys ``values`` (options' names) is that key's value, for the option to refuse, not a
    section (``batch_size: {}`` left the default in force, silently)."""
    try:
        loader = _UniqueKeyLoader(Path(path).read_text(encoding="utf-8"))
        try:
            data = loader.get_single_data() or {}
        finally:
            loader.dispose()
    except FileNotFoundError:
        raise NmtkitError(f"{path}: no such config file", exit_code=2) from None
    except IsADirectoryError:
        raise NmtkitError(f"{path}: a folder, not a config file", exit_code=2) from None
    except UnicodeDecodeError as e:
        raise NmtkitError(f"{path}: not UTF-8 text (byte {e.start + 1})", exit_code=2) from None
    except yaml.YAMLError as e:
        raise NmtkitError(f"{path}: invalid YAML ({str(e).splitlines()[0]}"
                          f"{f', line {e.problem_mark.line + 1}' if getattr(e, 'problem_mark', None) else ''})",
                          exit_code=2) from None
    if not isinstance(data, dict):
        raise NmtkitError(f"{path}: a config must be a mapping of keys to values", exit_code=2)
    flat: dict = {}

    def walk(d: Mapping) -> None:
        for k, v in d.items():
            key = str(k).replace("-", "_")
            if isinstance(v, dict) and key not in values:
                walk(v)
                continue
            if key in flat:  # (in two sections, or as emb-size and emb_size: one would be dropped)
                lines = " and ".join(map(str, sorted(set(loader.key_lines.get(key, [])))))
                raise NmtkitError(f"{path}: the key {key!r} is given twice{f' (lines {lines})' if lines else ''}",
                                  exit_code=2)
            flat[key] = v

    walk(data)
    return FileValues(flat, {k: min(loader.key_lines[k]) for k in flat if k in loader.key_lines})


def resolve(options: Iterable[Option], file_values: Mapping[str, Any], cli_values: Mapping[str, Any],
            file_name: str = "config", explain: Optional[Callable[[list[str]], str]] = None) -> dict:
    """Merge defaults, file values and command-line values (later wins); reject unknown file keys
    (``explain`` gives the message's hint for them)."""
    by_name = {o.name: o for o in options}
    lines = file_values if isinstance(file_values, FileValues) else FileValues(file_values, {})
    unknown = sorted(set(file_values) - set(by_name), key=lambda k: (lines.lines.get(k, 0), k))
    if unknown:
        hint = explain(unknown) if explain else "see 'nmtkit train --help'"
        named = ", ".join(f"{k} (line {lines.lines[k]})" if k in lines.lines else k for k in unknown)
        raise NmtkitError(f"{file_name}: unknown key(s) {named}: {hint}", exit_code=2)
    config = {name: o.default for name, o in by_name.items()}
    for k, v in file_values.items():
        config[k] = by_name[k].coerce(v, lines.where(k, file_name))
    for k, v in cli_values.items():
        if v is not None and k in by_name:
            config[k] = by_name[k].coerce(v, by_name[k].flag)
    return config
