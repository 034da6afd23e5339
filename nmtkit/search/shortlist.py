"""Lexical shortlists (``translate --shortlist FILE``): each batch's output layer restricted to the words it can need.

As Marian does on CPUs: the output layer of a batch computes the logits of a shortlist only, the union of the
``first`` ids of the target vocabulary (its most frequent words; the most probable pieces of a SentencePiece model)
and the ``best`` translations of each source word of the batch in a lexical table (``nmtkit align``, fast_align
``-p``, eflomal priors: :mod:`nmtkit.tools.lexicon`). The softmax runs over the shortlist. At this model size the
output layer is half of a decoding step's arithmetic (an 8k vocabulary; more for larger ones), so the step gets
cheaper by about that share times the fraction of the vocabulary left out.

:class:`Shortlisted` is one more model to the search: its outputs are positions in the batch's shortlist (sorted
target ids, the special tokens first, so ``<s>`` and ``</s>`` keep their ids), it feeds the model the target ids of
those positions, and :meth:`Shortlisted.output_ids` maps the hypotheses back. Only decoding steps are restricted:
what ``encode`` computes (the greedy reverse pass of two-pass models) sees the whole vocabulary.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Mapping, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import SPECIALS, Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import DecoderState
from nmtkit.search.precision import PackedLinear, worth_packing
from nmtkit.search.wrapped import Wrapped


class Shortlist:
    """The candidate target ids of each source id: ``table [source vocabulary, best]`` (padded with ``</s>``), and
    the ids every batch gets (``always``: the special tokens and the ``first`` ids of the target vocabulary)."""

    def __init__(self, table: torch.Tensor, always: torch.Tensor):
        self.table, self.always = table, always

    @classmethod
    def from_translations(cls, translations: Mapping[str, Sequence[str]], src_vocab: Vocab, tgt_vocab: Vocab,
                          first: int = 100, best: int = 100, name: str = "the table") -> "Shortlist":
        """The shortlist of a lexical table (each source word's target words, best first:
        :func:`nmtkit.tools.lexicon.load_translations`) for a model's source and target vocabularies (entries of
        words outside them are left out); ``name`` names the table in errors."""
        src_index = {token: i for i, token in enumerate(src_vocab.id_to_token(range(len(src_vocab))))}
        tgt_index = {token: i for i, token in enumerate(tgt_vocab.id_to_token(range(len(tgt_vocab))))}
        table = torch.full((len(src_vocab), best), SPECIALS.index("</s>"), dtype=torch.long)
        found = 0
        for word, options in translations.items():
            ids = [tgt_index[t] for t in options if t in tgt_index][:best]
            if word in src_index and ids:
                table[src_index[word], :len(ids)] = torch.tensor(ids)
                found += 1
        if not found:
            raise NmtkitError(f"--shortlist {name}: no entry pairs a source word of the model with a target word of "
                              "it; is the table for this model's segmentation (e.g. SentencePiece pieces)?", exit_code=2)
        return cls(table, torch.arange(min(len(tgt_vocab), len(SPECIALS) + first)))

    def ids(self, sources: torch.Tensor) -> torch.Tensor:
        """The sorted target ids of a batch of source ids ``[B, S]`` (padding included: it adds ``</s>`` only)."""
        table = self.table.to(sources.device)
        return torch.cat([self.always.to(sources.device), table[sources.flatten()].flatten()]).unique(sorted=True)


class ShortlistedLinear(nn.Module):
    """An output layer that computes the rows of a batch's shortlist only while :attr:`active` (their weights copied
    once a batch by :meth:`restrict`, and packed for oneDNN's kernels when the wrapped layer is and the copy is large
    enough, or the layer packs every one: see :class:`PackedLinear`), and all of them through the wrapped ``layer``
    (plain, packed or quantised) otherwise."""

    def __init__(self, layer: nn.Module, weight: torch.Tensor, bias: Optional[torch.Tensor]):
        super().__init__()
        self.layer, self.full_weight, self.full_bias = layer, weight, bias
        self.active = False
        self.weight: Optional[torch.Tensor] = None  # the restricted copies
        self.bias: Optional[torch.Tensor] = None
        self.packed: Optional[PackedLinear] = None

    def restrict(self, rows: torch.Tensor) -> None:
        """The rows to compute while active, from now on."""
        self.weight = self.full_weight.detach().index_select(0, rows)
        self.bias = None if self.full_bias is None else self.full_bias.detach().index_select(0, rows)
        layer, self.packed = self.layer, None
        if isinstance(layer, PackedLinear) and (layer.every or worth_packing(self.weight)):
            self.packed = PackedLinear(self.weight, self.bias, layer.every)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.active or self.weight is None:
            return self.layer(x)
        if self.packed is not None:
            return self.packed(x)
        return F.linear(x, self.weight, self.bias)


class Shortlisted(Wrapped):
    """``model`` with its output layers restricted to each batch's shortlist during decoding steps (see the module's
    docstring); ``stream``: the input whose words pick the shortlist."""

    def __init__(self, model: Seq2Seq, shortlist: Shortlist, vocab_size: int, stream: str = "src"):
        super().__init__(model)
        self.merges_states = False  # (each batch has its own shortlist)
        if stream not in model.inputs:
            raise NmtkitError(f"--shortlist: this {type(model).__name__} model reads no text input {stream!r} whose "
                              "words could pick a shortlist", exit_code=2)
        self.layers = []
        modules = dict(model.named_modules())
        for name in model.output_layers:  # the model names them: other layers may have as many outputs
            layer = modules.get(name)
            if not (isinstance(layer, nn.Linear) and layer.out_features == vocab_size):
                raise NmtkitError(f"--shortlist: this {type(model).__name__} model has no output layer onto its "
                                  f"{vocab_size}-word vocabulary to restrict ({name})", exit_code=2)
            parent, _, attribute = name.rpartition(".")
            wrapped = ShortlistedLinear(layer, layer.weight, layer.bias)
            setattr(model.get_submodule(parent), attribute, wrapped)
            self.layers.append(wrapped)
        self.shortlist, self.stream = shortlist, stream
        self.batch_ids: Optional[torch.Tensor] = None  #: the target ids of the current batch's shortlist

    def encode(self, batch: Batch) -> DecoderState:
        self.batch_ids = self.shortlist.ids(batch[self.stream].data)
        for layer in self.layers:
            layer.restrict(self.batch_ids)
        return self.model.encode(batch)

    @contextmanager
    def _restricted(self) -> Iterator[None]:
        for layer in self.layers:
            layer.active = True
        try:
            yield
        finally:
            for layer in self.layers:
                layer.active = False

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        assert self.batch_ids is not None, "encode a batch first"
        with self._restricted():
            return self.model.decode_step(self.batch_ids[prev], state)

    def output_ids(self, tokens: Sequence[int]) -> list[int]:
        assert self.batch_ids is not None
        return self.batch_ids[torch.as_tensor(list(tokens), dtype=torch.long)].tolist()
