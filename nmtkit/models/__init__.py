"""Models: the registry and every registered architecture.

Every module of this package is imported here, so an architecture in a new module registers
itself with its ``@register_model``; the registry imports the modules named in the
``NMTKIT_PLUGINS`` environment variable for architectures kept outside nmtkit (docs/api.md).
"""
import importlib
import pkgutil

from nmtkit.models.registry import build_model, get_spec, model_names, register_model  # noqa: F401
from nmtkit.models.seq2seq import ModelOutput, Seq2Seq  # noqa: F401
from nmtkit.models.state import DecoderState  # noqa: F401

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
