"""What a model can read and write against what it would be trained and validated on: a model with a length limit
(a table of learned positions) is refused before the first update if the corpus holds longer sentences."""
from __future__ import annotations

from typing import Optional

from nmtkit.data.shards import Corpus
from nmtkit.data.streams import TARGET
from nmtkit.errors import NmtkitError
from nmtkit.models.seq2seq import Seq2Seq


def stream_limits(model: Seq2Seq) -> dict[str, Optional[int]]:
    """The most tokens the model can read of each input stream and output (``</s>`` excluded); None: any."""
    return {stream: model.input_limit() for stream in model.inputs} | {TARGET: model.output_limit()}


def width_caps(model: Seq2Seq) -> dict[str, int]:
    """The widest padded batch of each stream the model can take, where it has a limit: its tokens and ``</s>``
    (``<s>`` and the tokens for the target's input)."""
    return {stream: limit + 1 for stream, limit in stream_limits(model).items() if limit is not None}


def check_length_limits(model: Seq2Seq, corpus: Corpus, max_len: int) -> None:
    """Raise a one-line error if a training sentence (within ``max_len`` tokens; 0: any) or a validation sentence
    of a stream the model reads or outputs is longer than the model's :meth:`~Seq2Seq.input_limit` or
    :meth:`~Seq2Seq.output_limit`."""
    limits = stream_limits(model)
    if all(limit is None for limit in limits.values()):
        return
    for split in ("train", "valid"):
        for stream, longest in corpus.longest(split).items():
            limit = limits.get(stream)
            if split == "train" and max_len:
                longest = min(longest, max_len)
            if limit is not None and longest > limit:
                can = "output" if stream == TARGET else "read"
                fix = f"--max-len {limit} or " if split == "train" else ""
                option = model.limit_option or "limit of this model"
                raise NmtkitError(f"the {split} set has {stream} sentences of {longest} tokens, more than this model "
                                  f"can {can} ({limit}, set by {option}); give {fix}a larger {option}", exit_code=2)
