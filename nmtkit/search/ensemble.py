"""Ensembles: several models decoding as one, for ``translate -m A.pt -m B.pt`` (and ``caption``).

At each step the ensemble's score of a token is the weighted mean of its members' log-probabilities,
log p(y) = Σ_k w_k log p_k(y) with Σ_k w_k = 1 (as Marian ensembles; a weighted product of the
members' distributions, left unnormalised: the search only ranks). To the search it is one more
:class:`~nmtkit.models.seq2seq.Seq2Seq`: its state is the members' states side by side, each tensor named
``<member>.<name>``, so beam reordering and finished sentences leaving the batch serve it unchanged.

Members may be any architectures that share the target vocabulary. Their inputs may be read
differently (a source segmented by another SentencePiece model, say): member k's input ``s`` is the batch stream
``s`` when it reads it as member 1 does, else the stream ``s@k`` that :class:`EnsembleSources` makes from the
same field of each line. The attention weights (for attention files) are those of one member, the first unless
chosen.
"""
from __future__ import annotations

import math
from contextlib import ExitStack, contextmanager
from fractions import Fraction
from typing import Iterator, Optional, Sequence, cast

import torch
from torch import nn

from nmtkit.data.batching import Batch
from nmtkit.errors import NmtkitError
from nmtkit.models.seq2seq import AttentionWeights, Seq2Seq
from nmtkit.models.state import PENDING, DecoderState
from nmtkit.search.sources import Inputs, Line, Source, StreamSources

StreamNames = dict[str, str]  #: a member's input streams -> the ensemble batch's streams they are read from


def normalised_weights(weights: Optional[Sequence[float]], count: int) -> list[float]:
    """Member weights summing to 1: equal when not given; else ``count`` finite numbers above 0, each divided by
    their sum as exact fractions (no sum overflows: 1e308,1e308 weigh as 1,1), rounded once."""
    if weights is None:
        return [1.0 / count] * count
    if len(weights) != count:
        raise NmtkitError(f"--weights: {len(weights)} weight(s) for {count} model(s); give one per -m", exit_code=2)
    bad = [w for w in weights if not (math.isfinite(w) and w > 0)]
    if bad:
        raise NmtkitError(f"--weights: expects finite numbers above 0, got {bad[0]} in {' '.join(map(str, weights))}",
                          exit_code=2)
    exact = [Fraction(w) for w in weights]
    return [float(w / sum(exact)) for w in exact]


class Ensemble(Seq2Seq):
    """Members decoding in step, their log-probabilities averaged with ``weights``; ``streams[k]`` says where member
    k reads each of its inputs; ``attention_from``: the member whose attention weights each step gives."""

    def __init__(self, members: Sequence[Seq2Seq], weights: Sequence[float], streams: Sequence[StreamNames],
                 attention_from: int = 0):
        super().__init__()
        if not 0 <= attention_from < len(members):
            raise NmtkitError(f"--attention-model: expects 1 to {len(members)}, got {attention_from + 1}", exit_code=2)
        self.members = nn.ModuleList(members)
        self.weights = list(weights)
        self.streams = [dict(s) for s in streams]
        self.attention_from = attention_from
        self.inputs = members[0].inputs  # what the lines hold; further streams are made from the same fields
        self.output_layers = tuple(f"members.{k}.{name}" for k, m in enumerate(members) for name in m.output_layers)
        self.attention_labels = members[attention_from].attention_labels

    @property
    def models(self) -> list[Seq2Seq]:
        """The members, typed."""
        return cast(list[Seq2Seq], list(self.members))

    def _member_batch(self, k: int, batch: Batch) -> Batch:
        return Batch({own: batch[name] for own, name in self.streams[k].items()}, batch.tgt_in, batch.tgt_out)

    def encode(self, batch: Batch) -> DecoderState:
        """The members' states in one, member k's tensor ``name`` as ``k.name``, each declared (static, growing,
        shared, deferred) as the member declares it."""
        states = [member.encode(self._member_batch(k, batch)) for k, member in enumerate(self.models)]

        def named(kind: str) -> list[str]:
            return [f"{k}.{name}" for k, s in enumerate(states) for name in getattr(s, kind)]
        return DecoderState({f"{k}.{name}": t for k, s in enumerate(states) for name, t in s.tensors.items()},
                            named("static"), named("grows"), shared=named("shared"), deferred=named("deferred"))

    def _split(self, state: DecoderState) -> list[DecoderState]:
        """Each member's own state out of the ensemble's, declared as :meth:`encode` declared it; the rows a
        reorder recorded (:data:`PENDING`, the ensemble's) go to each member that defers tensors, whose step takes
        them."""
        parts: list[dict[str, torch.Tensor]] = [{} for _ in self.members]
        for name, t in state.tensors.items():
            number, _, own = name.partition(".")
            if name != PENDING:
                parts[int(number)][own] = t

        def declared(kind: str, k: int) -> set[str]:
            return {name.partition(".")[2] for name in getattr(state, kind) if name.partition(".")[0] == str(k)}
        for k, part in enumerate(parts):
            if PENDING in state and declared("deferred", k):
                part[PENDING] = state[PENDING]
        return [DecoderState(part, declared("static", k), declared("grows", k), state.beams, declared("shared", k),
                             declared("deferred", k)) for k, part in enumerate(parts)]

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        total: Optional[torch.Tensor] = None
        tensors: dict[str, torch.Tensor] = {}
        attention: AttentionWeights = {}
        for k, (member, own, weight) in enumerate(zip(self.models, self._split(state), self.weights)):
            log_probs, own, weights = member.decode_step(prev, own)
            total = weight * log_probs if total is None else total.add_(log_probs, alpha=weight)
            tensors.update({f"{k}.{name}": t for name, t in own.tensors.items()})
            if k == self.attention_from:
                attention = weights
        assert total is not None
        return total, state.like(tensors), attention

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        return self.models[0].max_output_len(self._member_batch(0, batch), a, b)

    def input_limit(self) -> Optional[int]:
        """The least of the members' limits."""
        return min((n for n in (m.input_limit() for m in self.models) if n is not None), default=None)

    def output_limit(self) -> Optional[int]:
        return min((n for n in (m.output_limit() for m in self.models) if n is not None), default=None)

    def choose_attention(self, layer: Optional[int] = None, head: Optional[int] = None) -> None:
        self.models[self.attention_from].choose_attention(layer, head)

    @contextmanager
    def attention_weights(self, wanted: bool) -> Iterator[None]:
        with ExitStack() as stack:
            for member in self.models:
                stack.enter_context(member.attention_weights(wanted))
            yield


class EnsembleSources:
    """The inputs of an ensemble's batches from each line: the sources of the first member, and of each member that
    reads an input otherwise, read the same fields; each input lands in the stream its member reads it from
    (``streams``). Attention labels are those of part ``labels_from``."""

    def __init__(self, sources: Sequence[StreamSources], streams: Sequence[StreamNames], labels_from: int = 0):
        self.parts = list(zip(sources, streams))
        self.labels_from = labels_from
        self.name = sources[0].name

    @property
    def invalid(self) -> list[int]:
        return sorted({n for s, _ in self.parts for n in s.invalid})

    @property
    def problem(self) -> str:
        return " or ".join(dict.fromkeys(s.problem for s, _ in self.parts if s.invalid))

    @property
    def truncated(self) -> int:
        return sum(s.truncated for s, _ in self.parts)

    @property
    def fields(self) -> list[str]:
        return self.parts[0][0].fields

    def read(self, index: int, line: Line) -> Optional[Inputs]:
        """Line ``index`` (from 0) as the inputs of every member, or None if any member cannot use it."""
        inputs: Inputs = {}
        for k, (source, streams) in enumerate(self.parts):
            own = source.read(index, line)
            if own is None:
                return None
            source.finish([own])  # line by line: its items ready before they merge
            inputs.update({streams[stream]: item for stream, item in own.items() if k == 0 or streams[stream] != stream})
        return inputs

    chunk_size = None  # any number of lines: :meth:`read` gives them ready

    def finish(self, chunk: Sequence[Optional[Inputs]]) -> None:
        """Nothing left to do: :meth:`read` finished each line's items."""

    def labels(self, inputs: Inputs) -> dict[str, list[str]]:
        source, streams = self.parts[self.labels_from]
        return source.labels({stream: inputs[name] for stream, name in streams.items()})


def ensemble_sources(sources: Sequence[Source | StreamSources], ensemble: Ensemble) -> StreamSources | EnsembleSources:
    """What reads an ensemble's inputs from lines, given each member's sources: the first member's when all read
    their inputs alike, else an :class:`EnsembleSources` of the members that read some input otherwise."""
    def streamed(source):
        return source if isinstance(source, StreamSources) else StreamSources([source], getattr(source, "name", ""))

    own = [k for k, streams in enumerate(ensemble.streams) if k == 0 or any(s != n for s, n in streams.items())]
    if own == [0]:
        return streamed(sources[0])
    labels = own.index(ensemble.attention_from) if ensemble.attention_from in own else 0
    return EnsembleSources([streamed(sources[k]) for k in own], [ensemble.streams[k] for k in own], labels)
