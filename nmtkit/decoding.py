"""Decoding as a library: :class:`DecodeSettings` (the models and how to search) and a :class:`Decoder` that loads
them once and translates lines, used by ``translate``, ``caption`` and ``serve`` alike; the commands only map their
options onto the settings, read inputs and write outputs.

Every setting mirrors a ``translate`` option of the same name, and a bad combination is a one-line error naming
the options. ::

    decoder = Decoder(DecodeSettings(models=("model/best.pt",), beam=5))
    for result in decoder.translate_texts(["Click OK.", "Save the file."]):
        print(result.texts[0], result.confidence[0])
"""
from __future__ import annotations

import dataclasses
import json
import numbers
import os
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterable, Iterator, Optional, Sequence, Union, cast

import torch

from nmtkit.compiling import check_compiler
from nmtkit.config import DECODING, DEVICE, expect
from nmtkit.data.text import without_bom
from nmtkit.errors import NmtkitError
from nmtkit.inference import LoadedModel, ensemble_of, load_model
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.search.alignment import Aligner, source_attention
from nmtkit.search.attention_file import AttentionWriter
from nmtkit.search.compiled import Compiled
from nmtkit.search.continuous import ContinuousSearch, supports
from nmtkit.search.ensemble import Ensemble, ensemble_sources, normalised_weights
from nmtkit.search.guides import ConstraintSource, GuidedSources, prefix_source
from nmtkit.search.precision import PRECISIONS
from nmtkit.search.prefix import Prefixed
from nmtkit.search.sources import (
    Line,
    Source,
    StreamSources,
    TextSource,
    fields_of,
    line_text,
    model_sources,
    reading_limit,
)
from nmtkit.search.splitting import Splitter
from nmtkit.search.translator import LineReader, LineResult, PostProcess, SearchOptions, Translator

#: ``sources(loaded, model_path)``: what turns lines into a loaded model's inputs (text, image paths, feature rows)
SourceMaker = Callable[[LoadedModel, str], Union[Source, StreamSources]]


@dataclass(frozen=True)
class DecodeSettings:
    """How to decode: the checkpoints (several: an ensemble, weighted by ``weights``), the search (beam, n-best,
    length penalty and limits, or sampling), arithmetic and device, and what the outputs go through (a shortlist,
    edit costs, ``<unk>`` replacement). Each field is the ``translate`` option of its name."""

    models: tuple[str, ...]
    weights: Optional[tuple[float, ...]] = None
    attention_model: int = 1  #: with an ensemble: the member (from 1) whose attention the outputs carry
    beam: int = 5
    n_best: int = 1
    length_penalty: float = 1.0
    batch_size: int = 32
    max_len_a: float = 1.5
    max_len_b: int = 10
    max_input_len: Optional[int] = 250
    sampling: bool = False
    sampling_topk: int = 0
    temperature: float = 1.0
    seed: int = 1
    device: str = "auto"
    precision: str = "fp32"
    threads: int = 0
    attention: bool = False  #: keep each output's attention (attention files, alignments)
    attention_layer: Optional[int] = None
    attention_head: Optional[int] = None
    shortlist: Optional[str] = None
    shortlist_first: int = 100
    shortlist_best: int = 100
    edit_cost: float = 0.0
    replace_unk: bool = False
    dictionary: Optional[str] = None  #: ``--dict``: the lexical table of ``replace_unk``
    cnn_weights: Optional[str] = None
    prefix: bool = False  #: each line's last field is a target prefix that its outputs start with (``--prefix-file``)
    alignments: bool = False  #: each output's word alignment with the first input, from its attention
    constraints: bool = False  #: each line's last field lists target phrases that its outputs contain (``--constraints``)
    split_long: bool = False  #: a text line too long for the model is cut at sentence ends, not truncated
    compile: bool = False  #: the decoding step through ``torch.compile`` (:mod:`nmtkit.search.compiled`)

    def check(self) -> None:
        """A one-line error (exit code 2) for settings that do not go together, before any model loads."""
        if not (isinstance(self.models, (list, tuple)) and self.models
                and all(isinstance(path, (str, os.PathLike)) for path in self.models)):
            raise NmtkitError(f"-m/--model: expects a list of checkpoints (one: a model; several: an ensemble), got "
                              f"{self.models!r}", exit_code=2)
        if not isinstance(self.device, str) or self.device not in DEVICE:
            raise NmtkitError(f"--device: expects {DEVICE}, got {self.device!r}", exit_code=2)
        flags = [f.name for f in dataclasses.fields(self) if str(f.type) == "bool"]
        wrong = next((name for name in flags if not isinstance(getattr(self, name), bool)), None)
        if wrong:
            raise NmtkitError(f"{wrong}: expects True or False, got {getattr(self, wrong)!r}", exit_code=2)
        optional = {f.name for f in dataclasses.fields(self) if str(f.type).startswith("Optional")}
        for name in DECODING:  # (the CLI's options check the same as they are parsed)
            check_value(name, getattr(self, name), f"--{name.replace('_', '-')}", name in optional)
        if self.sampling and self.n_best > 1:
            raise NmtkitError("--n-best: --sampling draws one output a line", exit_code=2)
        if self.n_best > self.beam:
            raise NmtkitError(f"--n-best: expects at most the beam size ({self.beam}), got {self.n_best}", exit_code=2)
        if self.attention_model > len(self.models):
            raise NmtkitError(f"--attention-model: expects 1 to {len(self.models)} (one per -m), got "
                              f"{self.attention_model}", exit_code=2)
        if self.weights is not None and (isinstance(self.weights, (str, bytes)) or not all(
                isinstance(w, numbers.Real) and not isinstance(w, bool) for w in self.weights)):
            raise NmtkitError(f"--weights: expects a list of numbers, one per model, got {self.weights!r}",
                              exit_code=2)
        if self.weights is not None:
            if len(self.models) == 1:
                raise NmtkitError("--weights: weighs the models of an ensemble (several -m); got one model",
                                  exit_code=2)
            normalised_weights(self.weights, len(self.models))
        if self.dictionary and not self.replace_unk:
            raise NmtkitError("--dict goes with --replace-unk", exit_code=2)
        if self.edit_cost and self.shortlist:
            raise NmtkitError("--edit-cost: post-editing models decode without --shortlist", exit_code=2)
        for name, given in (("--prefix-file", self.prefix), ("--constraints", self.constraints)):
            if given and self.shortlist:
                raise NmtkitError(f"{name}: decodes over the whole vocabulary, not a --shortlist", exit_code=2)
            if given and self.replace_unk:  # (its <unk> would become the most attended source word)
                raise NmtkitError(f"{name}: its words are yours, and --replace-unk would put source words in place of "
                                  "those outside the vocabulary; use one or the other", exit_code=2)
        if self.split_long and (self.prefix or self.constraints or self.alignments or self.replace_unk
                                or self.attention):
            raise NmtkitError("--split-long: a line's pieces are translated apart, so they take no --prefix-file, "
                              "--constraints, --alignments, --replace-unk or --attention-out", exit_code=2)
        if self.constraints and self.sampling:
            raise NmtkitError("--constraints: a constrained beam search, not --sampling", exit_code=2)
        if self.precision not in PRECISIONS:  # (else found only once the model has loaded)
            raise NmtkitError(f"--precision: {self.precision!r} is not one of {', '.join(PRECISIONS)}", exit_code=2)
        for name in ("shortlist", "dictionary"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), (str, os.PathLike)):
                raise NmtkitError(f"{name}: expects a file's path, got {getattr(self, name)!r}", exit_code=2)

    def search_options(self, sampler=None) -> SearchOptions:
        """The search's options (greedy where the beam is 1)."""
        return SearchOptions(self.beam, self.n_best, self.max_len_a, self.max_len_b, self.length_penalty,
                             self.batch_size, attention=self.attention or self.replace_unk or self.alignments,
                             sampler=sampler)


def text_sources(settings: DecodeSettings, name: str = "<input>") -> SourceMaker:
    """Sources reading each of a model's inputs from a line's fields, ``name`` naming them in messages."""
    def make(loaded: LoadedModel, path: str) -> StreamSources:
        return model_sources(loaded, path, [name] * len(loaded.model.inputs), settings.max_input_len,
                             settings.cnn_weights, split=settings.split_long)
    return make


def check_value(name: str, value: Any, label: str, optional: bool = False) -> None:
    """A one-line error (exit code 2, naming ``label``) for a value of decoding setting ``name`` (:data:`DECODING`)
    of another type or range (None, where ``optional``, is no value)."""
    kind, allowed = DECODING[name]
    number = isinstance(value, numbers.Integral if kind is int else numbers.Real) and not isinstance(value, bool)
    if not (value is None and optional) and not (number and value in allowed):
        raise NmtkitError(f"{label}: expects {expect(kind, allowed)}, got {value!r}", exit_code=2)


def check_search(options: SearchOptions) -> None:
    """The search options of one call (``Decoder.translate(options=...)``), checked as the settings are: a beam of
    0 searched greedily, a batch of 0 failed in ``range``, and an n-best above the beam gave lines other numbers of
    entries."""
    for name, field in (("beam", "beam_size"), ("n_best", "n_best"), ("length_penalty", "length_penalty"),
                        ("batch_size", "batch_size"), ("max_len_a", "max_len_a"), ("max_len_b", "max_len_b")):
        check_value(name, getattr(options, field), f"options.{field}")
    if options.n_best > options.beam_size:
        raise NmtkitError(f"options.n_best: expects at most the beam size ({options.beam_size}), got "
                          f"{options.n_best}", exit_code=2)


class Decoder:
    """The models of ``settings`` loaded once (an ensemble of several), made ready to decode on their device, and
    what turns lines into their inputs (``sources``; default: text, one field per model input) and outputs into
    text. :meth:`translate` then decodes any number of line sequences, one :class:`LineResult` per line, in order.

    ``sources[k]`` is member k's sources, whose ``invalid`` and ``truncated`` count what went wrong with lines
    so far; ``unk_counts`` what ``replace_unk`` replaced."""

    def __init__(self, settings: DecodeSettings, sources: Optional[SourceMaker] = None, name: str = "<input>",
                 guide_names: Optional[tuple[str, str]] = None):
        from nmtkit.device import pick_device
        from nmtkit.search.precision import for_inference

        settings.check()
        if settings.threads > 0:
            torch.set_num_threads(settings.threads)
        self.settings = settings
        self.device = pick_device(settings.device)
        if settings.compile:
            check_compiler(self.device)
        make = sources or text_sources(settings, name)
        members = [load_model(path, self.device) for path in settings.models]
        self.sources = [make(member, path) for member, path in zip(members, settings.models)]
        self.source: LineReader
        if len(members) == 1:
            self.loaded, first = members[0], self.sources[0]
            self.source = first if isinstance(first, StreamSources) else StreamSources([first], getattr(first, "name", name))
        else:
            self.loaded = ensemble_of(members, settings.models, settings.weights, settings.attention_model - 1)
            self.source = ensemble_sources(self.sources, cast(Ensemble, self.loaded.model))
        self.loaded.model.choose_attention(settings.attention_layer, settings.attention_head)
        guides = guide_sources(self.loaded, settings, guide_names or (f"prefix of {name}", f"constraints of {name}"))
        if guides:
            self.source = GuidedSources(self.source, guides)
        ready, self._arithmetic = for_inference(self._restricted(), settings.precision, self.device,
                                                compiled=settings.compile)
        model = cast(Seq2Seq, ready)
        if settings.compile:
            model = Compiled(model, frozen=self.device.type == "cpu" and settings.precision == "bf16")
        self.model = Prefixed(model) if settings.prefix else model
        sampler = None
        if settings.sampling:
            from nmtkit.search.sampling import Sampler

            generator = torch.Generator(self.device).manual_seed(settings.seed)
            sampler = Sampler(settings.sampling_topk, settings.temperature, generator)
        self.options = settings.search_options(sampler)
        self.unk_counts = None
        replace = None
        if settings.replace_unk:
            limit = reading_limit(self.loaded.model, settings.max_input_len)[0]
            replace, self.unk_counts = unk_replacement(self.loaded, settings.dictionary, limit)
        self.postprocess = chained([step for step in (replace, as_text(self.loaded, self.source)) if step])
        self._aligner = aligner_of(self.loaded) if settings.alignments else None  # (else made when first asked for)
        self.splitter = splitter_of(self.loaded, self.source) if settings.split_long else None

    def _restricted(self):
        """The model to search with: the loaded one, or it with a shortlisted output layer or edit costs."""
        s, loaded = self.settings, self.loaded
        if s.shortlist:
            return shortlisted(loaded, s.shortlist, s.shortlist_first, s.shortlist_best)
        if s.edit_cost:
            return edit_costed(loaded, s.edit_cost)
        return loaded.model

    def warm_up(self, continuous: bool = False) -> bool:
        """Where the decoding step is compiled (``compile``) and the model reads text: decode made-up lines, one
        alone and then two together, by the settings' search and, where that is a beam search, greedily too (a
        server's request may ask for ``"beam": 1``), and with ``continuous`` one line joining the running search
        of another, where the settings allow continuous batching; so that the compilations of the first shapes (a
        batch of one line and of more, each search, a merged state) happen now, not in the first lines a server is
        sent; whether it did."""
        readers = getattr(self.sources[0], "sources", {}).values()
        if not self.settings.compile or not readers or not all(isinstance(s, TextSource) for s in readers):
            return False
        fields = len(self.loaded.model.inputs)
        texts = [[text] * fields for text in ("A line to warm up with.", "Warm up.")]
        searches = [self.options]
        if self.options.beam_size > 1:
            searches.append(dataclasses.replace(self.options, beam_size=1, n_best=1))
        for options in searches:
            for group in (texts[:1], texts):
                list(self.translate(self.lines(group), chunk_size=len(group), options=options))
        search = self.continuous() if continuous else None
        if search is not None:
            search.add(0, self.lines(texts[:1]))
            search.step()
            search.add(1, self.lines(texts[1:]))  # (joins the running search: their states merge)
            while search.busy:
                search.step()
        return True

    def aligner(self) -> Aligner:
        """What aligns outputs with the first input (see :func:`aligner_of`), made once."""
        if self._aligner is None:
            self._aligner = aligner_of(self.loaded)
        return self._aligner

    def arithmetic(self) -> ContextManager:
        """The context decoding runs in (autocast for bf16)."""
        return self._arithmetic()

    def translate(self, lines: Iterable[Line], attention_out: Optional[AttentionWriter] = None,
                  on_batch: Optional[Callable[[int], None]] = None, chunk_size: int = 10_000,
                  options: Optional[SearchOptions] = None, alignments: Optional[bool] = None) -> Iterator[LineResult]:
        """One result per line (its bytes, or one field per input), in order, ``chunk_size`` lines read and sorted
        by length at a time (1: each line decoded as it arrives); ``attention_out`` gets each best output's
        attention; ``on_batch(k)`` after each batch of k lines; ``options``: the search's, if not the settings'
        (e.g. another beam size for one request); ``alignments``: whether results carry word alignments, if not as
        the settings say (a one-line error for a model without a text input)."""
        results = self._translator(options, alignments, chunk_size, attention_out).translate(lines, on_batch)
        while True:  # (in the decoder's arithmetic while it computes, not while the caller holds a result: its code
            with self.arithmetic():  # runs in its own, and generators taking turns do not leave autocast on)
                result = next(results, None)
            if result is None:
                return
            yield result

    def continuous(self, options: Optional[SearchOptions] = None,
                   alignments: Optional[bool] = None) -> Optional[ContinuousSearch]:
        """A search that groups of lines without prefixes or constraints join as they come (continuous batching:
        see :mod:`nmtkit.search.continuous`), with ``options`` and ``alignments`` as :meth:`translate` takes them;
        None where these settings search otherwise (greedily, sampling, with alignments or attention, an ensemble, a
        shortlist): decode those, and lines with prefixes or constraints, with :meth:`translate`."""
        model = self.model.model if isinstance(self.model, Prefixed) else self.model  # (no prefix: the model's own)
        translator = self._translator(options, alignments, model=model)
        opts = translator.opts
        if not supports(model, opts.beam_size, opts.sampler is not None or opts.attention):
            return None
        return ContinuousSearch(translator, self.arithmetic)

    def _translator(self, options: Optional[SearchOptions], alignments: Optional[bool], chunk_size: int = 10_000,
                    attention_out: Optional[AttentionWriter] = None, model: Optional[Seq2Seq] = None) -> Translator:
        if options is not None:
            check_search(options)
        align = self.settings.alignments if alignments is None else alignments
        return Translator(model or self.model, self.source, self.loaded.tgt_vocab, options or self.options, self.device,
                          chunk_size, attention_out, self.postprocess, self.aligner() if align else None,
                          self.splitter)

    def translate_texts(self, texts: Sequence[Union[str, Sequence[str]]], prefixes: Optional[Sequence[str]] = None,
                        constraints: Optional[Sequence[Sequence[str]]] = None) -> list[LineResult]:
        """One result per text (a model with several inputs: one string per input, or TAB-separated fields), each
        output starting with its text's prefix in ``prefixes`` (settings with ``prefix``) and containing its target
        phrases in ``constraints`` (settings with ``constraints``), if given."""
        return list(self.translate(self.lines(texts, prefixes, constraints)))

    def lines(self, texts: Sequence[Union[str, Sequence[str]]], prefixes: Optional[Sequence[str]] = None,
              constraints: Optional[Sequence[Sequence[str]]] = None) -> list[Line]:
        """The lines that :meth:`translate` reads for ``texts``, with their ``prefixes`` and ``constraints`` (target
        phrases) where the settings take them (see :meth:`translate_texts`); a one-line error naming the item
        (``text.3``, ``prefix.0``, ``constraints.1``) for an item of another type, a wrong number of inputs or
        guides, or a lone surrogate."""
        texts = texts if isinstance(texts, (str, bytes)) else list(texts)  # (read once each: a generator will do)
        prefixes = prefixes if prefixes is None or isinstance(prefixes, (str, bytes)) else list(prefixes)
        constraints = constraints if constraints is None or isinstance(constraints, (str, bytes)) else list(constraints)
        guides = [("prefix", prefixes, self.settings.prefix), ("constraints", constraints, self.settings.constraints)]
        kinds = {"text": (lambda t: isinstance(t, str) or _strings(t), "a string, or a list of strings (one per input)"),
                 "prefix": (lambda t: isinstance(t, str), "a string"),
                 "constraints": (_strings, "a list of strings (target phrases)")}
        for name, given in (("text", texts), ("prefix", prefixes), ("constraints", constraints)):
            if given is None:
                continue
            if isinstance(given, (str, bytes)):
                raise NmtkitError(f"{name}: expects a list with one item per line, got {type(given).__name__}",
                                  exit_code=2)
            fits, expected = kinds[name]
            wrong = next((k for k, item in enumerate(given) if not fits(item)), None)
            if wrong is not None:
                raise NmtkitError(f"{name}.{wrong}: expects {expected}, got {type(given[wrong]).__name__}",
                                  exit_code=2)
        for name, given, wanted in guides:
            plural = "prefixes" if name == "prefix" else name
            if given is not None and not wanted:
                raise NmtkitError(f"{name}: this model decodes without {plural}", exit_code=2)
            if given is not None and len(given) != len(texts):
                raise NmtkitError(f"{name}: {len(given)} {plural} for {len(texts)} lines; give one per line",
                                  exit_code=2)
        fields = len(self.source.fields) - sum(wanted for _, _, wanted in guides)
        lines: list[Line] = []
        for k, text in enumerate(texts):
            if not isinstance(text, str) and len(text) != fields:
                raise NmtkitError(f"text.{k}: {len(text)} inputs; this model reads {fields}", exit_code=2)
            line = tuple(without_bom(field) for field in fields_of(_utf8(text, fields, f"text.{k}")))
            for name, given, wanted in guides:
                if wanted:
                    value = "" if given is None else given[k] if name == "prefix" else \
                        json.dumps(list(given[k]), ensure_ascii=False)
                    line = (*line, *fields_of(_utf8(value, 1, f"{name}.{k}")))
            lines.append(line[0] if len(line) == 1 else line)
        return lines


def _strings(value: object) -> bool:
    """Whether ``value`` is a list (or tuple) of strings."""
    return isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)


def _utf8(text: Union[str, Sequence[str]], fields: int, name: str) -> Line:
    """:func:`encoded` ``text``, or a one-line error naming ``name`` where it holds a lone surrogate."""
    try:
        return encoded(text, fields)
    except UnicodeEncodeError:
        raise NmtkitError(f"{name}: not valid Unicode (a lone surrogate)", exit_code=2) from None


def encoded(text: Union[str, Sequence[str]], fields: int) -> Line:
    """A text (or one text per input) as the line bytes the sources read: several fields where the model has
    several inputs, a string split at its TABs; raises UnicodeEncodeError for a lone surrogate."""
    if isinstance(text, str):
        return tuple(text.encode("utf-8").split(b"\t")) if fields > 1 else text.encode("utf-8")
    return tuple(field.encode("utf-8") for field in text)


def shortlisted(loaded: LoadedModel, path: str, first: int, best: int):
    """``--shortlist``: the model with its output layer restricted, per batch, to the ``first`` most frequent target
    words and the ``best`` translations of the batch's source words in the lexical table ``path``."""
    from nmtkit.search.shortlist import Shortlist, Shortlisted
    from nmtkit.tools.lexicon import load_translations

    stream = loaded.model.inputs[0]
    if stream not in loaded.vocabs:
        raise NmtkitError(f"--shortlist: this {loaded.config['arch']} model's first input ({stream}) is not text",
                          exit_code=2)
    shortlist = Shortlist.from_translations(load_translations(path, best), loaded.vocabs[stream], loaded.tgt_vocab,
                                            first, best, path)
    return Shortlisted(loaded.model, shortlist, len(loaded.tgt_vocab), stream)


def edit_costed(loaded: LoadedModel, cost: float):
    """``--edit-cost``: a post-editing model whose every edit operation costs ``cost`` log-probability."""
    from nmtkit.search.token_costs import TokenCosts, edit_costs

    form = loaded.output_form
    if not form.edits:
        raise NmtkitError(f"--edit-cost: this {loaded.config['arch']} model outputs text, not edit operations (a "
                          "post-editing model's corpus is made with preprocess --ape-edits)", exit_code=2)
    return TokenCosts(loaded.model, edit_costs(len(loaded.tgt_vocab), form.unchanged_ids(loaded.tgt_vocab), cost))


def guide_sources(loaded: LoadedModel, settings: DecodeSettings, names: tuple[str, str]) -> list[Source]:
    """The sources of the fields that follow a line's inputs: its target prefix, then its constraints, as the
    settings ask (neither for a model whose outputs are edit operations), ``names`` naming them in warnings."""
    wanted = [name for name, given in (("--prefix-file", settings.prefix), ("--constraints", settings.constraints))
              if given]
    if wanted and loaded.output_form.edits:
        raise NmtkitError(f"{wanted[0]}: this {loaded.config['arch']} model outputs edit operations, not text",
                          exit_code=2)
    guides: list[Source] = []
    if settings.prefix:
        guides.append(prefix_source(loaded.tgt_vocab, loaded.model.output_limit(), names[0]))
    if settings.constraints:
        guides.append(ConstraintSource(loaded.tgt_vocab, names[1]))
    return guides


def splitter_of(loaded: LoadedModel, source: LineReader) -> Optional[Splitter]:
    """``--split-long``: what cuts a line too long for the model into pieces; a model with one text input only (and
    None where nothing limits its length)."""
    text = source.sources.get(loaded.model.inputs[0]) if isinstance(source, StreamSources) else None
    if len(loaded.model.inputs) != 1 or not isinstance(text, TextSource):
        raise NmtkitError(f"--split-long: cuts a text line; this {loaded.config['arch']} model (or ensemble) reads "
                          f"{', '.join(loaded.model.inputs)}, not one text input read alike", exit_code=2)
    return None if text.max_input_len is None else Splitter(text.stream, text.vocab, text.max_input_len)


def aligner_of(loaded: LoadedModel) -> Aligner:
    """``--alignments``: what aligns outputs with the model's first input, which must be text, in words; a model
    whose outputs are edit operations has none."""
    stream = loaded.model.inputs[0]
    if stream not in loaded.vocabs:
        raise NmtkitError(f"--alignments: this {loaded.config['arch']} model's first input ({stream}) is not text",
                          exit_code=2)
    if loaded.output_form.edits:
        raise NmtkitError(f"--alignments: this {loaded.config['arch']} model outputs edit operations, not text",
                          exit_code=2)
    model = loaded.model
    if isinstance(model, Ensemble) and model.streams[model.attention_from][stream] != stream:
        raise NmtkitError(f"--alignments: the ensemble's model {model.attention_from + 1} (--attention-model) reads "
                          f"{stream} otherwise than the first (another vocabulary or length limit), so its attention "
                          "is over other positions than the first's words; give --attention-model of a model that "
                          "reads it as the first does", exit_code=2)
    return Aligner(stream, loaded.vocabs[stream], loaded.tgt_vocab)


def as_text(loaded: LoadedModel, source: LineReader) -> Optional[PostProcess]:
    """What turns a model's output into text in its output form, with the line's raw inputs that the form reads
    (e.g. the edit operations of automatic post-editing applied to the MT input), found among the fields that
    ``source`` reads from a line; None where outputs are text."""
    form = loaded.output_form
    if not form.reads:
        return None
    fields_of = {stream: source.fields.index(stream) for stream in form.reads}
    return lambda index, line, output, hypothesis: form.text(
        output, {stream: line_text(index, line[k]) for stream, k in fields_of.items()})


def unk_replacement(loaded: LoadedModel, dict_path: Optional[str], max_input_len: Optional[int]):
    """``--replace-unk``: what replaces each ``<unk>`` of an output by the dictionary translation of the source word
    it attended to most, or that word (replace-unk's rule, target-target-attention.txt §3.2), and the counts of
    what it replaced. Needs word vocabularies on the first input and the output."""
    from nmtkit.data.vocab import UNK, WordVocab
    from nmtkit.tools.lexicon import load_lexicon
    from nmtkit.tools.replace_unk import Counts, replace_unks

    stream = loaded.model.inputs[0]
    if not (isinstance(loaded.vocabs.get(stream), WordVocab) and isinstance(loaded.tgt_vocab, WordVocab)):
        raise NmtkitError(f"--replace-unk: needs word vocabularies (preprocess --vocab word:N) on the model's first "
                          f"input ({stream}) and its output", exit_code=2)
    if isinstance(loaded.model, Ensemble) and any(own != name for streams in loaded.model.streams
                                                  for own, name in streams.items()):
        raise NmtkitError("--replace-unk: the ensemble's models read the source differently (other vocabularies or "
                          "length limits), so their attention is over different positions", exit_code=2)
    lexicon = load_lexicon(dict_path) if dict_path else {}
    counts = Counts()

    def replace(index: int, fields, text: str, hypothesis) -> str:
        counts.lines += 1
        if UNK not in hypothesis.tokens:
            return text
        words = line_text(index, fields[0]).split()[:max_input_len]
        tokens = replace_unks(loaded.tgt_vocab.id_to_token(hypothesis.tokens), words,
                              source_attention(hypothesis, "--replace-unk"), lexicon, counts)
        return " ".join(t for t, i in zip(tokens, hypothesis.tokens) if i == UNK or i >= 4)  # as decode drops

    return replace, counts


def chained(steps: Sequence[PostProcess]) -> Optional[PostProcess]:
    """One :data:`PostProcess` doing ``steps`` in turn (None for none)."""
    if not steps:
        return None

    def run(index, fields, text, hypothesis):
        for step in steps:
            text = step(index, fields, text, hypothesis)
        return text
    return run

