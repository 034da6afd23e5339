"""The model registry: architecture name -> builder and its options.

Adding an architecture is one module with one ``@register_model``; the trainer, the
search and the CLI find it here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from nmtkit.config import Option
from nmtkit.errors import NmtkitError


@dataclass
class ModelSpec:
    name: str
    builder: Callable
    options: list[Option] = field(default_factory=list)
    description: str = ""


MODELS: dict[str, ModelSpec] = {}


def register_model(name: str, options: Sequence[Option] = (), description: str = "") -> Callable:
    """Decorator: register ``builder(config, src_vocab_size, tgt_vocab_size) -> Seq2Seq`` as ``name``."""

    def wrap(builder: Callable) -> Callable:
        if name in MODELS:
            raise ValueError(f"model {name!r} registered twice")
        MODELS[name] = ModelSpec(name, builder, list(options), description)
        return builder

    return wrap


def model_names() -> list[str]:
    return sorted(MODELS)


def get_spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise NmtkitError(f"--arch: unknown architecture {name!r}; known: {', '.join(model_names())}", exit_code=2)
    return MODELS[name]


def model_options() -> list[Option]:
    """All architectures' options, each name once (architectures may share keys such as emb_size)."""
    seen: dict[str, Option] = {}
    for spec in MODELS.values():
        for o in spec.options:
            seen.setdefault(o.name, o)
    return list(seen.values())


def option_values(config: dict, options: Sequence[Option]) -> dict:
    """The values of ``options`` in ``config``, defaults for keys it lacks (configs saved before an option existed)."""
    return {o.name: config.get(o.name, o.default) for o in options}


def build_model(config: dict, src_vocab_size: int, tgt_vocab_size: int):
    """Build the architecture named by ``config['arch']``."""
    return get_spec(config["arch"]).builder(config, src_vocab_size, tgt_vocab_size)
