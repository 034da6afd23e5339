"""Lines in, text out: inputs made by sources (text or images, one or several per line), length-sorted batching,
search, order restored."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Mapping, Optional, Sequence, Union, cast

import torch

from nmtkit.data.batching import Batch, make_batch
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.progress import warn
from nmtkit.search.attention_file import AttentionWriter
from nmtkit.search.beam import beam_search
from nmtkit.search.constrained import CONSTRAINTS, constrained_beam_search, constraints_of, phrases_of, unmet
from nmtkit.search.ensemble import EnsembleSources
from nmtkit.search.greedy import greedy_search
from nmtkit.search.guides import GuidedSources
from nmtkit.search.hypothesis import Hypothesis
from nmtkit.search.prefix import PREFIX
from nmtkit.search.sampling import Sampler
from nmtkit.search.sources import Inputs, Item, Line, Source, StreamSources, fields_of, sort_length, stack_inputs
from nmtkit.search.splitting import Splitter, joined

#: what reads each line's fields into a model's inputs (several sources, an ensemble's, or they with guides: a target
#: prefix, constraints)
LineReader = Union[StreamSources, EnsembleSources, GuidedSources]
READERS = (StreamSources, EnsembleSources, GuidedSources)

#: ``postprocess(index, fields, text, hypothesis)``: what to write for an output ``text`` of line ``index`` (from 0),
#: given the line's raw fields (one per input) and the hypothesis (its ids and attention): e.g. the post-edit that
#: the edit operations ``text`` make of the MT input, or the text with its ``<unk>`` replaced
PostProcess = Callable[[int, Sequence[bytes], str, Hypothesis], str]


@dataclass
class SearchOptions:
    """How to search: beam size (1 = greedy), n-best, length limit a·|x|+b, length penalty, batch; or, with a
    ``sampler``, draw one output per sentence instead."""

    beam_size: int = 5
    n_best: int = 1
    max_len_a: float = 1.5
    max_len_b: int = 10
    length_penalty: float = 1.0
    batch_size: int = 32
    attention: bool = False
    sampler: Optional[Sampler] = None


def search_batch(model: Seq2Seq, batch: Batch, opts: SearchOptions, device: torch.device) -> list[list[Hypothesis]]:
    """Hypotheses for the sentences of a batch (greedy when ``beam_size`` is 1; a constrained beam search where the
    batch has constraints: a beam of ``beam_size``, greedy search's for 1)."""
    batch = batch.to(device)
    constraints = constraints_of(batch)
    with model.attention_weights(opts.attention):
        if constraints is not None and any(constraints):
            found = constrained_beam_search(model, batch, constraints, opts.beam_size, opts.n_best, opts.max_len_a,
                                            opts.max_len_b, opts.length_penalty, opts.attention)
        elif opts.sampler or opts.beam_size <= 1:
            found = greedy_search(model, batch, opts.max_len_a, opts.max_len_b, opts.attention, opts.sampler,
                                  0.0 if opts.sampler else opts.length_penalty)  # (a sample's score: its log-prob)
        else:
            found = beam_search(model, batch, opts.beam_size, opts.n_best, opts.max_len_a, opts.max_len_b,
                                opts.length_penalty, opts.attention)
    return [[replace(h, tokens=model.output_ids(h.tokens)) for h in n_best] for n_best in found]


def search_sorted(model: Seq2Seq, lengths: Sequence[int], batch_of: Callable[[list[int]], Batch],
                  opts: SearchOptions, device: torch.device,
                  on_batch: Optional[Callable[[int], None]] = None) -> list[list[Hypothesis]]:
    """Hypotheses for examples 0..n-1 in input order: batches of examples sorted by ``lengths`` (little
    padding), made by ``batch_of(indices)``; the model in eval mode meanwhile. ``on_batch(k)`` after each."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    results: list[list[Hypothesis]] = [[] for _ in lengths]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), opts.batch_size):
            idx = order[start:start + opts.batch_size]
            for i, hyps in zip(idx, search_batch(model, batch_of(idx), opts, device)):
                results[i] = hyps
            if on_batch:
                on_batch(len(idx))
    finally:
        model.train(was_training)
    return results


def translate_inputs(model: Seq2Seq, examples: Sequence[Mapping[str, Item]], opts: SearchOptions,
                     device: torch.device, on_batch: Optional[Callable[[int], None]] = None) -> list[list[Hypothesis]]:
    """Hypotheses for every example's inputs ``{stream: item}`` (token ids, or feature arrays ``[n, D]``), in input
    order, batched by the length of the longest text input (see :func:`search_sorted`)."""
    return search_sorted(model, [sort_length(x) for x in examples],
                         lambda idx: make_batch(stack_inputs([examples[i] for i in idx])), opts, device, on_batch)


def translate_ids(model: Seq2Seq, sources: Sequence[Item], opts: SearchOptions, device: torch.device,
                  on_batch: Optional[Callable[[int], None]] = None, stream: str = "src") -> list[list[Hypothesis]]:
    """Hypotheses for every input of one stream, in input order (see :func:`translate_inputs`)."""
    return translate_inputs(model, [{stream: item} for item in sources], opts, device, on_batch)


@dataclass
class LineResult:
    """What translate writes for one input line: the n-best outputs, each with its ranking score (log-probability /
    length^alpha), log-probability and length in tokens (``</s>`` included); N empty ones, scored 0 and of length
    0, for an empty or unusable line. A line has fewer than N entries only where the length limit leaves fewer
    outputs for the search to find."""

    index: int
    texts: list[str]
    scores: list[float]
    logprobs: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    alignments: Optional[list[str]] = None  #: each output's word alignment with the input (Moses ``i-j``), if asked
    truncated: bool = False  #: whether an input (or the prefix) of the line was cut at the length limit
    not_finite: bool = False  #: whether the model's scores for the line were not finite (its outputs left empty)
    unmet: list[str] = field(default_factory=list)  #: the constraints its best output lacks (none could hold all)
    unusable: bool = False  #: whether the line could not be read (its outputs left empty; a warning said why)

    @property
    def confidence(self) -> list[float]:
        """Each output's mean log-probability per token (``</s>`` included; 0 for an empty entry): comparable
        across lengths, closer to 0 where the model is surer."""
        return [logprob / length if length else 0.0 for logprob, length in zip(self.logprobs, self.lengths)]

    def flags(self) -> dict[str, Union[bool, list[str]]]:
        """What JSON says of the line beside its outputs, where true: ``truncated``, ``not_finite``, ``unusable``,
        and ``unmet_constraints``, the constraints (as given) that its best output lacks."""
        flags: dict[str, Union[bool, list[str]]] = {
            name: True for name in ("truncated", "not_finite", "unusable") if getattr(self, name)}
        return {**flags, "unmet_constraints": self.unmet} if self.unmet else flags

    def outputs(self) -> list[dict]:
        """Each output as JSON would hold it: ``text``, ``score``, ``logprob``, ``confidence``, ``tokens`` (its
        length) and, if made, its ``alignment``."""
        outputs = [{"text": text, "score": score, "logprob": logprob, "confidence": confidence, "tokens": length}
                   for text, score, logprob, confidence, length in
                   zip(self.texts, self.scores, self.logprobs, self.confidence, self.lengths)]
        for output, alignment in zip(outputs, self.alignments or []):
            output["alignment"] = alignment
        return outputs


@dataclass
class Pending:
    """An input line read for translation: its index, raw fields, model inputs (one per piece; None where the line
    is unusable) and whether an input was cut at the length limit."""

    index: int
    fields: Sequence[bytes]
    parts: Optional[list[Inputs]]
    truncated: bool = False


class Translator:
    """Translates (or captions) input lines with a model: each line becomes the model's inputs through a
    :class:`~nmtkit.search.sources.Source` (text to ids, an image path to features), or, for a model with several
    inputs, through a :class:`~nmtkit.search.sources.StreamSources` reading one field per input.

    Exactly one result per input line, in input order: an empty line (or input) gives an empty output; a line the
    sources cannot use (invalid UTF-8, an unreadable image, the wrong number of fields) gives an empty output and
    is counted in the source's ``invalid``. ``postprocess`` turns each output text into what is written;
    ``aligner(inputs, hypothesis)``, if given, gives each output's word alignment with its inputs; ``splitter``, if
    given, cuts a line too long for the model into pieces translated apart and joined.
    """

    def __init__(self, model: Seq2Seq, source: Union[Source, LineReader], tgt_vocab: Vocab, opts: SearchOptions,
                 device: torch.device, chunk_size: int = 10_000, attention_out: Optional[AttentionWriter] = None,
                 postprocess: Optional[PostProcess] = None, aligner: Optional[Callable[[Inputs, Hypothesis], str]] = None,
                 splitter: Optional[Splitter] = None):
        self.model, self.source, self.tgt_vocab = model, source, tgt_vocab
        self.inputs = source if isinstance(source, READERS) else StreamSources([source])
        self.opts = replace(opts, attention=True) if attention_out or aligner else opts
        self.device, self.chunk_size, self.attention_out = device, chunk_size, attention_out
        self.postprocess, self.aligner, self.splitter = postprocess, aligner, splitter
        if splitter and (attention_out or aligner):
            raise NmtkitError("--split-long: a line's pieces are translated apart; their attention is not joined "
                              "(no --attention-out or --alignments)", exit_code=2)

    def translate(self, lines: Iterable[Line], on_batch=None) -> Iterator[LineResult]:
        """Yield one :class:`LineResult` per input line (its bytes, or its fields), in order, a chunk of lines at a
        time."""
        chunk: list[Pending] = []
        size = min(self.chunk_size, self.inputs.chunk_size or self.chunk_size)
        for index, line in enumerate(lines):
            chunk.append(self.read(index, line))
            if len(chunk) >= size:
                yield from self._run(chunk, on_batch)
                chunk = []
        yield from self._run(chunk, on_batch)

    def read(self, index: int, line: Line) -> Pending:
        """Line ``index`` read into its model inputs (several pieces where the splitter cuts it; None where it is
        unusable)."""
        fields = fields_of(line)
        before = self.inputs.truncated
        inputs = self.inputs.read(index, fields)
        parts = None if inputs is None else self.splitter(inputs, fields[0], index) if self.splitter else [inputs]
        return Pending(index, fields, parts, self.inputs.truncated > before)

    def examples(self, chunk: Sequence[Pending]) -> list[Pending]:
        """The lines of a chunk that :meth:`read` gave which are to be searched, their inputs finished (images
        through the CNN); an empty or unusable line is not, and gets empty outputs."""
        read: list[Optional[Inputs]] = []
        for pending in chunk:
            read.extend(pending.parts if pending.parts is not None else [None])
        self.inputs.finish(read)
        optional = getattr(self.inputs, "optional", ())  # (streams that may be empty: a target prefix)
        return [pending for pending in chunk if pending.parts is not None
                and all(len(item) for stream, item in pending.parts[0].items() if stream not in optional)]

    def _run(self, chunk: list[Pending], on_batch) -> Iterator[LineResult]:
        todo = self.examples(chunk)
        hyps = iter(translate_inputs(self.model, [inputs for pending in todo for inputs in pending.parts or []],
                                     self.opts, self.device, on_batch))
        yield from self.results(chunk, {pending.index: [next(hyps) for _ in pending.parts or []] for pending in todo})

    def results(self, chunk: Sequence[Pending], found: Mapping[int, list[list[Hypothesis]]]) -> Iterator[LineResult]:
        """The results of a chunk's lines, given the n-best hypotheses ``found`` for each piece of the lines that
        were searched (by line index)."""
        for pending in chunk:
            index, fields = pending.index, pending.fields
            pieces = found.get(index, [])  # (a line cut into pieces: their hypotheses joined)
            nbest = [] if not (pieces and all(pieces)) else pieces[0] if len(pieces) == 1 else joined(
                pieces, self.opts.length_penalty)
            not_finite = index in found and not (nbest and all(math.isfinite(h.score) for h in nbest))
            if not_finite:  # (a search ends without hypotheses where every score is NaN or infinite)
                warn(f"{getattr(self.inputs, 'name', '<input>')}:{index + 1}: the model's scores are not finite (NaN "
                     "or infinite); writing an empty line")
            if index not in found or not_finite:
                if self.attention_out:
                    self.attention_out.add(index, [], [], {})
                n = self.opts.n_best  # n-best: N entries each
                yield LineResult(index, [""] * n, [0.0] * n, [0.0] * n, [0] * n, [""] * n if self.aligner else None,
                                 not_finite=not_finite, unusable=pending.parts is None,
                                 unmet=self._unused_guides(index, pending.parts[0]) if pending.parts and not not_finite else [])
                continue
            inputs = cast(list, pending.parts)[0]
            missing = self._check_constraints(index, inputs[CONSTRAINTS], nbest[0]) if CONSTRAINTS in inputs else []
            if self.attention_out:
                self._write_attention(index, inputs, nbest[0])
            texts = [self.tgt_vocab.decode(h.tokens) for h in nbest]
            if self.postprocess:
                texts = [self.postprocess(index, fields, text, h) for text, h in zip(texts, nbest)]
            yield LineResult(index, texts, [h.score for h in nbest], [h.logprob for h in nbest],
                             [len(h.tokens) + len(pieces) for h in nbest],
                             [self.aligner(inputs, h) for h in nbest] if self.aligner else None, pending.truncated,
                             unmet=missing)

    def _unused_guides(self, index: int, inputs: Inputs) -> list[str]:
        """An empty line's prefix and constraints, which its empty output cannot hold: a warning naming the line, and
        the constraints (decoded), unmet."""
        prefix, item = list(inputs.get(PREFIX, [])), list(inputs.get(CONSTRAINTS, []))
        phrases = phrases_of(item) if item else []
        if prefix or phrases:
            given = " and ".join(what for what, there in (("prefix", prefix), ("constraints", phrases)) if there)
            warn(f"{getattr(self.inputs, 'name', '<input>')}:{index + 1}: an empty line, translated as an empty one: "
                 f"its {given} not used")
        return [self.tgt_vocab.decode(phrase) for phrase in phrases]

    def _check_constraints(self, index: int, item, hyp: Hypothesis) -> list[str]:
        """The constraints (decoded) that the best output lacks (none could hold them all within the length limit),
        with a warning naming the line where there are some."""
        phrases = phrases_of(list(item))
        missing = [self.tgt_vocab.decode(phrases[c]) for c in unmet(hyp.tokens, phrases)]
        if missing:
            warn(f"{getattr(self.inputs, 'name', '<input>')}:{index + 1}: no output could hold every constraint; "
                 f"the best lacks {', '.join(map(repr, missing))}")
        return missing

    def _write_attention(self, index: int, inputs: Inputs, hyp: Hypothesis) -> None:
        """The tokens and attention of a line's best hypothesis: ``source`` over the first input, ``source.<stream>``
        over each further input, each trimmed to its input's positions."""
        assert self.attention_out is not None
        first, *further = self.inputs.labels(inputs).items()
        kinds = {"source": first[1], **{f"source.{stream}": labels for stream, labels in further}}
        tgt_tokens = self.tgt_vocab.id_to_token(hyp.tokens) + ["</s>"]
        attention = {kind: weights[:, :len(kinds[kind])] if kind in kinds else weights
                     for kind, weights in hyp.attention.items()}
        self.attention_out.add(index, first[1], tgt_tokens, attention, self.model.attention_labels, dict(further))
