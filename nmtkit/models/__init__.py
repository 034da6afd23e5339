"""Models: the registry and every registered architecture."""
from nmtkit.models import luong, rnnsearch, target_rnn  # noqa: F401  (register the architectures)
from nmtkit.models.registry import build_model, get_spec, model_names, register_model  # noqa: F401
from nmtkit.models.seq2seq import ModelOutput, Seq2Seq  # noqa: F401
from nmtkit.models.state import DecoderState  # noqa: F401
