"""The model registry: architecture name -> builder and its own options.

Adding an architecture is one module with one ``@register_model``; the trainer, the
search and the CLI find it here. Each architecture declares its own options (an
architecture's ``layers`` never takes another's default); ``train`` resolves them once
``--arch`` is known. Architectures outside nmtkit register from the modules named in the
``NMTKIT_PLUGINS`` environment variable (comma-separated), imported on first use.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence

from nmtkit.config import Option
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError

if TYPE_CHECKING:
    from nmtkit.models.seq2seq import Seq2Seq

#: ``builder(config, meta, vocabs) -> Seq2Seq``: the resolved options of the architecture, the corpus'
#: streams (kinds and sizes) and the vocabularies of its text streams.
Builder = Callable[[dict, CorpusMeta, Mapping[str, Vocab]], "Seq2Seq"]
#: ``uses(config, meta) -> [(option, whether config uses it, what it goes with), ...]``: the options (of ``train``)
#: that the architecture reads only with others, or with some of the corpus' streams, so that ``train`` refuses one
#: given where it is not read
Uses = Callable[[Mapping, CorpusMeta], Sequence[tuple[str, bool, str]]]


@dataclass
class ModelSpec:
    name: str
    builder: Builder
    options: list[Option] = field(default_factory=list)
    description: str = ""
    uses: Optional[Uses] = None

    def option(self, name: str) -> Optional[Option]:
        return next((o for o in self.options if o.name == name), None)


MODELS: dict[str, ModelSpec] = {}
_plugins_loaded: set[str] = set()


def load_plugins() -> None:
    """Import the modules named in ``NMTKIT_PLUGINS`` that are not imported yet (they register models)."""
    for name in filter(None, (p.strip() for p in os.environ.get("NMTKIT_PLUGINS", "").split(","))):
        if name not in _plugins_loaded:
            try:
                importlib.import_module(name)
            except Exception as e:  # (a syntax error, a model refused by register_model, any error as it runs)
                why = str(e) if isinstance(e, ImportError) else f"{type(e).__name__}: {e}"
                raise NmtkitError(f"NMTKIT_PLUGINS: cannot import {name!r} ({why})", exit_code=2) from None
            _plugins_loaded.add(name)  # (once imported: one that failed fails again at the next call, not silently)


def register_model(name: str, options: Sequence[Option] = (), description: str = "",
                   uses: Optional[Uses] = None) -> Callable[[Builder], Builder]:
    """Decorator: register ``builder(config, meta, vocabs) -> Seq2Seq`` as architecture ``name``
    with its ``options`` (each a config key and ``--flag`` of ``train``) and what ``uses`` says of them."""

    def wrap(builder: Builder) -> Builder:
        if name in MODELS:
            raise ValueError(f"model {name!r} is registered already (by {MODELS[name].builder.__module__}); give "
                             "this one another name")
        names = [o.name for o in options]
        if len(set(names)) != len(names):
            raise ValueError(f"model {name!r} declares an option twice")
        MODELS[name] = ModelSpec(name, builder, list(options), description, uses)
        return builder

    return wrap


def model_names() -> list[str]:
    load_plugins()
    return sorted(MODELS)


def get_spec(name: str) -> ModelSpec:
    load_plugins()
    if name not in MODELS:
        raise NmtkitError(f"--arch: unknown architecture {name!r}; known: {', '.join(model_names())}", exit_code=2)
    return MODELS[name]


def owners(option: str) -> list[str]:
    """The architectures that declare ``option`` (for messages about a key given to another one)."""
    return [n for n in model_names() if MODELS[n].option(option) is not None]


def option_values(config: Mapping, options: Sequence[Option]) -> dict:
    """The values of ``options`` in ``config``, defaults for keys it lacks (configs saved before an option existed)."""
    return {o.name: config.get(o.name, o.default) for o in options}


def build_model(config: Mapping, meta: CorpusMeta, vocabs: Optional[Mapping[str, Vocab]] = None) -> "Seq2Seq":
    """Build the architecture named by ``config['arch']`` with its options (defaults for missing keys)."""
    spec = get_spec(config["arch"])
    try:
        return spec.builder({**option_values(config, spec.options), "arch": spec.name}, meta, dict(vocabs or {}))
    except ValueError as e:  # options that do not go together (tied embeddings of different sizes, say)
        raise NmtkitError(f"--arch {spec.name}: {e}", exit_code=2) from None
