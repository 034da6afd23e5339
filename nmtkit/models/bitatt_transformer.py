"""BiTAtt-T (bidirectional-target-attention.txt §3.3, Eq. 24-27, Fig. 2): ``bitatt-transformer``.

A reverse decoder, a Transformer decoder stack of its own, reads the target right to left
(``<s> y_T .. y_1``) and attends to H_enc: R_dec (Eq. 24). The memory of the forward decoder's
attention is D_enc = Concat(H_enc, R_dec) along the sequence (Eq. 25), so F_dec =
Attention(H_dec, D_enc, D_enc) (Eq. 26). Training minimises the forward and the reverse
cross-entropy together (Eq. 27).

R_dec in training comes from the reverse decoder's greedy pass, as two-pass decoding has it
(``reverse_context: greedy``, the default, held fixed), or from the reverse decoder teacher-forced
on the reference (``reference``, the paper's). The reference's R_dec holds the reference words
themselves, which the forward decoder can learn to copy, and decoding cannot give it: the same
mismatch that cost bitatt-rnn about 4 BLEU (bench/README.md). Decoding is two-pass (§3.3):
:meth:`BiTAttTransformer.encode` decodes greedily right to left, then the forward decoder searches
over D_enc through the same ``decode_step`` as every model.

Attention files: ``source`` is the attention over H_enc, ``encoders`` the share of each output
word's attention on the source and on the reverse target (``plot-attn --kind encoders``).
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
from nmtkit.models.seq2seq import AttentionWeights, ModelOutput, max_lengths
from nmtkit.models.state import DecoderState
from nmtkit.models.target_rnn import CONTEXTS, REVERSE_MAX_LEN
from nmtkit.models.transformer import TRANSFORMER_OPTIONS, DecoderStack, Transformer, check_shared_vocabulary

BITATT_OPTIONS = TRANSFORMER_OPTIONS + [
    Option("reverse_context", "greedy", "R_dec in training from the reverse decoder's greedy pass, as two-pass "
           "decoding has it, or teacher-forced on the reference (the paper, Eq. 27)", choices=CONTEXTS,
           training_only=True),
]


class BiTAttTransformer(Transformer):
    attention_labels = {"encoders": ("source", "reverse target")}
    compiles_once = False  # (the greedy reverse pass of training loops over steps)

    def __init__(self, *args, reverse_context: str = "greedy", **kwargs):
        super().__init__(*args, **kwargs)
        if reverse_context not in CONTEXTS:
            raise ValueError(f"unknown reverse_context {reverse_context!r}")
        self.context_from = reverse_context
        self.reverse = DecoderStack(len(self.decoder.layers), self.layer_args, "reverse_")
        self._init_parameters(self.tie)

    def _reverse_forced(self, h_enc: torch.Tensor, mask: torch.Tensor, reverse_in: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """The reverse decoder teacher-forced on ``<s> y_T .. y_1``: its logits and its states R_dec (Eq. 24)."""
        h, _ = self.reverse(self._embed(self.tgt_emb, reverse_in), self.reverse.memory(h_enc), mask)
        return self.output(h), h

    def _reverse_greedy(self, h_enc: torch.Tensor, mask: torch.Tensor, src_lengths: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """R_dec ``[B, K, d]`` of the greedy reverse pass and its mask ``[B, K]``: the states of the steps up to
        the one that emits ``</s>``, or of a·|x| + b + 1 steps (``REVERSE_MAX_LEN``); zero beyond."""
        def step(prev: torch.Tensor, state: DecoderState, t: int) -> tuple[torch.Tensor, DecoderState, torch.Tensor]:
            h, updates, _ = self.reverse.step(self._embed(self.tgt_emb, prev.unsqueeze(1), offset=t), state)
            return self.output(h), state.replace(**updates), h

        tensors = self.reverse.start(self.reverse.memory(h_enc), mask)
        limit = max_lengths(src_lengths, *REVERSE_MAX_LEN) + 1
        if self.positions.limit is not None:  # a step a position
            limit = limit.clamp(max=self.positions.limit)
        r_dec = h_enc.new_zeros(h_enc.size(0), int(limit.max()), h_enc.size(2))
        lengths = torch.zeros_like(src_lengths)
        for t, live, h, _ in greedy_pass(step, DecoderState(tensors, self.reverse.statics(tensors)), limit):
            r_dec[live, t - 1] = h
            lengths[live] = t
        k = int(lengths.max())
        return r_dec[:, :k], torch.arange(k, device=h_enc.device).unsqueeze(0) < lengths.unsqueeze(1)

    @staticmethod
    def _memory_of(h_enc: torch.Tensor, mask: torch.Tensor, r_dec: torch.Tensor, r_mask: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """D_enc = Concat(H_enc, R_dec) (Eq. 25) and its mask."""
        return torch.cat([h_enc, r_dec], 1), torch.cat([mask, r_mask[:, None, None, :]], -1)

    def memory(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """D_enc with R_dec of the greedy reverse pass (the first pass of decoding)."""
        h_enc, mask = self._encode(batch)
        return self._memory_of(h_enc, mask, *self._reverse_greedy(h_enc, mask, batch["src"].lengths))

    def attention(self, w: Optional[torch.Tensor], sources: int) -> AttentionWeights:
        if w is None:
            return {}
        s = sources
        return {"source": w[..., :s], "encoders": torch.stack([w[..., :s].sum(-1), w[..., s:].sum(-1)], -1)}

    def score_logits(self, batch: Batch) -> torch.Tensor:
        """The forward decoder over D_enc with R_dec of the greedy reverse pass, as decoding has it."""
        return super().forward(batch).logits

    def forward(self, batch: Batch) -> ModelOutput:
        h_enc, mask = self._encode(batch)
        reverse_in, reverse_out = batch.reversed_target()
        reverse_logits, r_dec = self._reverse_forced(h_enc, mask, reverse_in)
        r_mask = reverse_in != PAD
        if self.context_from == "greedy":  # R_dec as two-pass decoding computes it, a fixed input here
            with torch.no_grad():
                r_dec, r_mask = self._reverse_greedy(h_enc, mask, batch["src"].lengths)
        memory, d_mask = self._memory_of(h_enc, mask, r_dec, r_mask)
        h, w = self.decoder(self._embed(self.tgt_emb, batch.tgt_in), self.decoder.memory(memory), d_mask,
                            self.weights_wanted)
        # the joint loss of Eq. 27: the reverse decoder's cross-entropy is added to the forward one
        return ModelOutput(self.output(h), self.attention(w, h_enc.size(1)), auxiliary=[(reverse_logits, reverse_out)])


@register_model("bitatt-transformer", BITATT_OPTIONS, "the Transformer with a reverse decoder whose states join the "
                "encoder's as the forward decoder's memory; joint loss, two-pass decoding (Eq. 24-27)")
def build(config: dict, meta: CorpusMeta, vocabs: Mapping[str, Vocab]) -> BiTAttTransformer:
    check_shared_vocabulary(config, vocabs.get("src"), vocabs.get("tgt"))
    return BiTAttTransformer(*meta.translation_sizes("bitatt-transformer"), **option_values(config, BITATT_OPTIONS))
