"""A model reading two inputs, ``src`` and ``mt``, for unit tests of multi-input decoding (no training).

It writes the words of ``src`` followed by those of ``mt``, then ``</s>``: its output shows which inputs of which
line it was given. One vocabulary (:data:`VOCAB`) serves both inputs and the output. Its attention is that of a
multi-source model: ``source`` one-hot on the ``src`` position it copies (``</s>`` once past it), ``source.mt`` on
the ``mt`` position it copies (its ``</s>`` otherwise), and ``encoders`` one-hot on the input it copies from (``sentinel`` for ``</s>``).
"""
from __future__ import annotations

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import EOS, WordVocab
from nmtkit.models.seq2seq import Seq2Seq, max_lengths
from nmtkit.models.state import DecoderState

VOCAB = WordVocab("one two three four five six seven eight nine ten".split())


class CopyBoth(Seq2Seq):
    """Copies ``src`` then ``mt`` (each without its ``</s>``), then ends."""

    inputs = ("src", "mt")
    attention_labels = {"encoders": ("src", "mt", "sentinel")}

    def __init__(self) -> None:
        super().__init__()
        self.size = len(VOCAB)

    def encode(self, batch: Batch) -> DecoderState:
        src, mt = batch["src"], batch["mt"]
        return DecoderState({"src": src.data, "src_len": src.lengths, "mt": mt.data, "mt_len": mt.lengths,
                             "t": torch.zeros(batch.size, dtype=torch.long, device=batch.device)},
                            static={"src", "src_len", "mt", "mt_len"})

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        return max_lengths(batch["src"].lengths + batch["mt"].lengths, 1.0, 1)

    def decode_step(self, prev: torch.Tensor, state: DecoderState):
        t, src_words, mt_words = state["t"], state["src_len"] - 1, state["mt_len"] - 1
        in_src, in_mt = t < src_words, (t >= src_words) & (t < src_words + mt_words)
        src_pos, mt_pos = t.clamp(max=state["src"].size(1) - 1), (t - src_words).clamp(0, state["mt"].size(1) - 1)
        token = torch.where(in_src, state["src"].gather(1, src_pos[:, None])[:, 0],
                            torch.where(in_mt, state["mt"].gather(1, mt_pos[:, None])[:, 0], EOS))
        log_probs = torch.log_softmax(10.0 * torch.nn.functional.one_hot(token, self.size).float(), -1)
        one_hot = lambda pos, width: torch.nn.functional.one_hot(pos, width).float()
        attention = {"source": one_hot(torch.minimum(t, src_words), state["src"].size(1)),
                     "source.mt": one_hot(torch.where(in_mt, mt_pos, mt_words), state["mt"].size(1)),
                     "encoders": one_hot(torch.where(in_src, 0, torch.where(in_mt, 1, 2)), 3)}
        return log_probs, state.replace(t=t + 1), attention
