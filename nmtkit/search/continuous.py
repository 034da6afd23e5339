"""Continuous batching: one running beam search that takes in new lines while it searches others, and gives back each
group of lines (a request) as soon as its last line is done.

A server decoding each batch of requests to its end waits for the batch's longest sentence while the rows of the
finished ones stand idle, and then for the next requests to arrive; here a request's lines join the search at the
next step, and the search stays as wide as the requests in flight. Each line is searched as it would be alone
(:meth:`nmtkit.models.state.DecoderState.merged`, tests/models/test_contract.py), so the outputs are the same.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, ContextManager, Hashable, Iterator, Mapping, Optional, Sequence, cast

from nmtkit.data.batching import make_batch
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.search.beam import BeamSearch
from nmtkit.search.constrained import CONSTRAINTS
from nmtkit.search.hypothesis import Hypothesis
from nmtkit.search.prefix import PREFIX
from nmtkit.search.sources import Inputs, Line, stack_inputs
from nmtkit.search.translator import LineResult, Pending, Translator


@dataclass
class _Group:
    """A group's lines as read, and the hypotheses of each piece of its searched lines (None until found)."""

    chunk: list[Pending]
    found: dict[int, list[Optional[list[Hypothesis]]]]
    left: int  # pieces still searched


class ContinuousSearch:
    """Groups of lines (:meth:`add`) searched together by one :class:`~nmtkit.search.beam.BeamSearch` that
    ``translator`` (its model, search options and what makes lines inputs and hypotheses results) sets up;
    :meth:`step` advances it and gives back the groups that are done, each with one :class:`LineResult` per line in
    order (indices from 0 within the group). ``arithmetic()``: the context the model runs in (autocast)."""

    def __init__(self, translator: Translator, arithmetic: Callable[[], ContextManager]):
        opts, model = translator.opts, translator.model
        if not supports(model, opts.beam_size, opts.sampler is not None or opts.attention):
            raise ValueError("continuous batching needs a beam search (beam ≥ 2) over a model whose states merge, "
                             "without attention")
        self.translator, self.model, self.arithmetic = translator, model, arithmetic
        self.search = BeamSearch(model, opts.beam_size, opts.n_best, opts.max_len_a, opts.max_len_b,
                                 opts.length_penalty)
        self.groups: dict[Hashable, _Group] = {}
        self.ready: list[Hashable] = []  # groups done without a search (no line to search)
        self.joining: list[tuple[tuple[Hashable, int, int], Inputs]] = []  # pieces added since the last step

    @property
    def size(self) -> int:
        """How many lines (pieces of lines) are being searched or are to join at the next step."""
        return self.search.size + len(self.joining)

    @property
    def busy(self) -> bool:
        """Whether a group is still to be given back."""
        return bool(self.groups)

    def add(self, tag: Hashable, lines: Sequence[Line]) -> None:
        """Bring a group of lines in, under ``tag`` (unique among the groups not yet given back): they join the
        search at the next step, with every other group added meanwhile (encoded as one batch)."""
        if tag in self.groups:
            raise ValueError(f"a group tagged {tag!r} is being searched")
        chunk = [self.translator.read(index, line) for index, line in enumerate(lines)]
        todo = self.translator.examples(chunk)
        pieces = [((tag, pending.index, k), inputs) for pending in todo for k, inputs in enumerate(pending.parts or [])]
        guided = [index for (_, index, _), inputs in pieces if any(len(inputs.get(s, ())) for s in (PREFIX, CONSTRAINTS))]
        if guided:  # (the search would drop them: the constrained and forced searches are translate's)
            raise ValueError(f"line {guided[0]} of the group has a target prefix or constraints: decode such lines "
                             "with translate, not in a running search")
        self.joining.extend(pieces)
        if not pieces:
            self.ready.append(tag)
        self.groups[tag] = _Group(chunk, {pending.index: [None] * len(pending.parts or []) for pending in todo},
                                  len(pieces))

    def step(self) -> list[tuple[Hashable, list[LineResult]]]:
        """One step of the search, the groups added since the last one joining it first; the groups done, with
        their results."""
        done = [(tag, self._results(tag)) for tag in self.ready]
        self.ready = []
        with self._running():
            if self.joining:
                joining, self.joining = self.joining, []
                batch = make_batch(stack_inputs([inputs for _, inputs in joining])).to(self.translator.device)
                self.search.add(batch, [piece for piece, _ in joining])
            ended = self.search.step() if self.search.size else []
        for piece, hypotheses in ended:
            tag, index, k = cast(tuple[Hashable, int, int], piece)
            group = self.groups[tag]
            group.found[index][k] = [replace(h, tokens=self.model.output_ids(h.tokens)) for h in hypotheses]
            group.left -= 1
            if not group.left:
                done.append((tag, self._results(tag)))
        return done

    def _results(self, tag: Hashable) -> list[LineResult]:
        group = self.groups.pop(tag)
        return list(self.translator.results(group.chunk, cast(Mapping[int, list[list[Hypothesis]]], group.found)))

    @contextmanager
    def _running(self) -> Iterator[None]:
        """The context of the search: the model in eval mode, computing no attention weights, in its arithmetic."""
        was_training = self.model.training
        if was_training:  # (a loaded model is in eval mode: walking its modules each step would cost)
            self.model.eval()
        try:
            with self.model.attention_weights(False), self.arithmetic():
                yield
        finally:
            if was_training:
                self.model.train()


def supports(model: Seq2Seq, beam_size: int, other_search: bool) -> bool:
    """Whether lines may join a running search of ``model`` at ``beam_size`` (not where the search samples or
    collects attention: ``other_search``)."""
    return model.merges_states and beam_size >= 2 and not other_search
