"""Target attention on the RNNSearch decoder: target-attn, ftatt-rnn, rtatt-rnn and bitatt-rnn.

- ``target-attn`` (target-target-attention.txt §2.2, Eq. 6-11) and ``ftatt-rnn``
  (bidirectional-target-attention.txt §3.1, Eq. 10-14) are one model under the two papers'
  names: the decoder attends over its own previous states s_1..s_{j-1}, and the target context
  enters the gates and the deep output.
- ``rtatt-rnn`` (§3.2, Eq. 15-20): a reverse decoder generates the target right to left from
  the same encoder, with its own target attention (Eq. 16-18); the mean of its states R̃
  is an extra input of the forward decoder's state and output (Eq. 19).
- ``bitatt-rnn`` (§3.3, Eq. 21-23): both.

With a reverse decoder, training minimises the forward and the reverse cross-entropy together
(Eq. 20, 23), R̃ coming, held fixed, from the reverse decoder's greedy pass as in decoding
(``reverse_context: greedy``, the default), or from the reverse decoder run over the reference
(``reference``, the paper's training, whose forward decoder learns to rely on an R̃ that decoding
cannot give it: bench/README.md).
Decoding is two-pass (§3.3): :meth:`TargetRNN.encode` first decodes greedily right to left,
then the forward decoder searches (beam or greedy) with R̃ of that pass, through the same
``decode_step`` as every model.
"""
from __future__ import annotations

from typing import Mapping, Optional

import torch

from nmtkit.config import Option
from nmtkit.data.batching import Batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.data.vocab import PAD, Vocab
from nmtkit.models.greedy_pass import greedy_pass
from nmtkit.models.registry import option_values, register_model
from nmtkit.models.rnnsearch import RNN_OPTIONS, RNNSearch
from nmtkit.models.seq2seq import ModelOutput, max_lengths
from nmtkit.models.state import DecoderState

REVERSE_MAX_LEN = (2, 10)  # the greedy reverse pass stops after a·|x| + b words and one more step if </s> never comes


CONTEXTS = ("greedy", "reference")
REVERSE_OPTIONS = RNN_OPTIONS + [
    Option("reverse_context", "greedy", "rtatt/bitatt-rnn: R̃ in training from the reverse decoder's greedy pass, as "
           "two-pass decoding has it, or teacher-forced on the reference (the paper, Eq. 20)", choices=CONTEXTS,
           training_only=True),
]


class TargetRNN(RNNSearch):
    def __init__(self, *args, reverse_context: str = "greedy", **kwargs):
        super().__init__(*args, **kwargs)
        if reverse_context not in CONTEXTS:
            raise ValueError(f"unknown reverse_context {reverse_context!r}")
        self.context_from = reverse_context

    def _forced_reverse(self, state: DecoderState, reverse_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The reverse decoder, started on ``state``, teacher-forced on ``reverse_in`` (``<s> y_T .. y_1``):
        its logits and R̃."""
        logits, states, _ = self.reverse(self.dropout(self.tgt_emb(reverse_in)), state)
        real = (reverse_in != PAD).unsqueeze(-1).to(states.dtype)
        return logits, (states * real).sum(1) / real.sum(1)

    def reverse_context(self, state: DecoderState, reverse_in: Optional[torch.Tensor] = None) -> torch.Tensor:
        """R̃ ``[B, H]``: the mean of the reverse decoder's states s←_1..s←_K (Eq. 19).

        With ``reverse_in`` (``<s> y_T .. y_1``) the reverse decoder is teacher-forced, as in
        training, and K = T + 1; without, it decodes greedily until it emits ``</s>`` (§3.3),
        the step that emits it included, or for at most a·|x| + b + 1 steps (``REVERSE_MAX_LEN``);
        a sentence leaves the batch when it ends.
        """
        state = self.reverse.start(state)
        return self._greedy_reverse(state) if reverse_in is None else self._forced_reverse(state, reverse_in)[1]

    def _greedy_reverse(self, state: DecoderState) -> torch.Tensor:
        """R̃ of the greedy reverse pass from a state the reverse decoder has started (see :meth:`reverse_context`)."""
        def step(prev: torch.Tensor, state: DecoderState, t: int) -> tuple[torch.Tensor, DecoderState, torch.Tensor]:
            logits, state, _ = self.reverse.step(self.dropout(self.tgt_emb(prev)), state)
            return logits, state, state["reverse_hidden"]

        limit = max_lengths(state["mask"].sum(1), *REVERSE_MAX_LEN) + 1  # the step that emits </s> counts
        total = means = None  # by original row: the sum of the states so far, and R̃ of the ended sentences
        for t, live, s, done in greedy_pass(step, state, limit):
            if total is None:
                total, means = s.new_zeros(limit.size(0), s.size(1)), s.new_zeros(limit.size(0), s.size(1))
            total[live] = total[live] + s
            ended = live[done]
            means[ended] = total[ended] / t
        return means

    def encode(self, batch: Batch) -> DecoderState:
        state = self.source(batch)
        future = self.reverse_context(state) if self.reverse is not None else None
        return self.decoder.start(state, future)

    def score_logits(self, batch: Batch) -> torch.Tensor:
        """RNNSearch's teacher-forced pass from :meth:`encode`, whose R̃ comes from the greedy reverse pass
        as in two-pass decoding: training's R̃ may come from the reference, which the score must not see."""
        return super().forward(batch).logits

    def forward(self, batch: Batch) -> ModelOutput:
        if self.reverse is None:
            return super().forward(batch)
        state = self.source(batch)
        reverse_in, reverse_out = batch.reversed_target()
        started = self.reverse.start(state)  # the reverse keys, for both passes below
        reverse_logits, future = self._forced_reverse(started, reverse_in)  # R̃ (Eq. 19) from the reference
        if self.context_from == "greedy":  # R̃ as two-pass decoding computes it, a fixed input here
            with torch.no_grad():
                future = self._greedy_reverse(started)
        state = self.decoder.start(state, future)
        logits, _, weights = self.decoder(self.dropout(self.tgt_emb(batch.tgt_in)), state)
        return ModelOutput(logits, weights, auxiliary=[(reverse_logits, reverse_out)])  # the second sum of Eq. 20 / 23


VARIANTS = {
    "target-attn": (True, False, "rnnsearch with target attention over s_1..s_{j-1} in the gates and output "
                                 "(target-target-attention.txt Eq. 6-11)"),
    "ftatt-rnn": (True, False, "forward target attention F_{i-1} (bidirectional-target-attention.txt Eq. 10-14); "
                               "the same model as target-attn"),
    "rtatt-rnn": (False, True, "rnnsearch plus a reverse decoder with target attention whose mean state feeds "
                               "the forward decoder; joint loss, two-pass decoding (Eq. 15-20)"),
    "bitatt-rnn": (True, True, "forward target attention and the reverse decoder's mean state; joint loss, "
                               "two-pass decoding (bidirectional-target-attention.txt Eq. 21-23)"),
}


def _register(name: str, target_attention: bool, reverse: bool, description: str) -> None:
    options = REVERSE_OPTIONS if reverse else RNN_OPTIONS

    @register_model(name, options, description)
    def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> TargetRNN:
        return TargetRNN(*meta.translation_sizes(name), target_attention=target_attention, reverse=reverse,
                         **option_values(config, options))


for _name, (_target, _reverse, _description) in VARIANTS.items():
    _register(_name, _target, _reverse, _description)
