"""What guides the search of a line besides its inputs, read from extra fields after them: a target prefix that the
output starts with (``--prefix-file``, :mod:`nmtkit.search.prefix`), and constraints that it contains
(``--constraints``, :mod:`nmtkit.search.constrained`). Each becomes a batch stream of target ids that the search
reads, and that may be empty (no guide for that line)."""
from __future__ import annotations

import json
from typing import Optional, Sequence, Union

from nmtkit.data.vocab import UNK, Vocab
from nmtkit.progress import warn
from nmtkit.search.constrained import CONSTRAINTS, flat
from nmtkit.search.ensemble import EnsembleSources
from nmtkit.search.prefix import PREFIX
from nmtkit.search.sources import Inputs, Line, Source, StreamSources, TextSource, fields_of, line_text, unusable


def prefix_source(vocab: Vocab, limit: Optional[int], name: str) -> TextSource:
    """Target prefixes, one a line, tokenised with the target vocabulary; one longer than ``limit`` tokens (the
    model's longest output) is cut there with a warning, and one with words outside the vocabulary is warned of."""
    return PrefixSource(vocab, limit, name, PREFIX, "the most this model outputs")


class PrefixSource(TextSource):
    """:class:`TextSource` of target prefixes, warning of words the target vocabulary lacks."""

    def read(self, index: int, raw: bytes) -> Optional[list[int]]:
        ids = super().read(index, raw)
        if ids:
            warn_unknown(self.vocab, self.name, index, line_text(index, raw).strip(), ids)
        return ids


def warn_unknown(vocab: Vocab, name: str, index: int, phrase: str, ids: Sequence[int]) -> None:
    """Warn, naming the line, where a target phrase forced into the output holds words outside ``vocab``: the output
    will hold ``<unk>`` in their place."""
    if UNK in ids:
        unknown = [word for word in phrase.split() if UNK in vocab.encode(word)] or [phrase]
        warn(f"{name}:{index + 1}: {', '.join(map(repr, unknown))} not in the target vocabulary: the output holds "
             "<unk> in place")


class ConstraintSource:
    """Constraints, one JSON list of target phrases a line (``["Dialog", "OK button"]``; empty line or ``[]``:
    none), each tokenised with the target vocabulary, as one stream item (phrases separated by ``</s>``). A line
    that is not such a list gives None, a warning naming it, and its number in ``invalid``."""

    problem, reads_field, strict = "with constraints that are not a JSON list of strings", True, False

    def __init__(self, vocab: Vocab, name: str):
        self.vocab, self.name, self.stream = vocab, name, CONSTRAINTS
        self.invalid: list[int] = []

    def read(self, index: int, raw: bytes) -> Optional[list[int]]:
        try:
            text = line_text(index, raw).strip()
            phrases = json.loads(text) if text else []
            if not (isinstance(phrases, list) and all(isinstance(p, str) for p in phrases)):
                raise ValueError(f"{type(phrases).__name__}, not a list of strings")
        except ValueError as e:  # (UnicodeDecodeError and JSONDecodeError too)
            unusable(False, self.invalid, index, f"{self.name}:{index + 1}: not a JSON list of strings ({e})")
            return None
        encoded = [self.vocab.encode(phrase) for phrase in phrases]
        for phrase, ids in zip(phrases, encoded):
            warn_unknown(self.vocab, self.name, index, phrase, ids)
        return flat(encoded)

    def labels(self, item) -> list[str]:
        return self.vocab.id_to_token(list(item))


class GuidedSources:
    """Lines whose fields are the model's inputs, read by ``sources``, then one field per guide (a prefix, the
    constraints), each read by its own source into the stream it names."""

    def __init__(self, sources: Union[StreamSources, EnsembleSources], guides: Sequence[Source]):
        self.sources, self.guides = sources, list(guides)
        self.name = sources.name
        self.optional = frozenset(guide.stream for guide in self.guides)  #: streams that may be empty
        self.wrong_fields: list[int] = []

    @property
    def fields(self) -> list[str]:
        return [*self.sources.fields, *(guide.stream for guide in self.guides)]

    @property
    def invalid(self) -> list[int]:
        return sorted({*self.sources.invalid, *(n for g in self.guides for n in g.invalid), *self.wrong_fields})

    @property
    def problem(self) -> str:
        problems = [self.sources.problem] if self.sources.invalid else []
        problems += [f"{guide.problem} in {guide.name}" for guide in self.guides if guide.invalid]
        problems += ["with the wrong number of fields"] if self.wrong_fields else []
        return " or ".join(problems)

    @property
    def truncated(self) -> int:
        return self.sources.truncated + sum(getattr(guide, "truncated", 0) for guide in self.guides)

    @property
    def chunk_size(self) -> Optional[int]:
        return self.sources.chunk_size

    def read(self, index: int, line: Line) -> Optional[Inputs]:
        """Line ``index`` (from 0) as the model's inputs and its guides, or None."""
        fields, guides = fields_of(line), len(self.guides)
        if len(fields) <= guides:  # (the inputs' own sources check their fields, the guides' are the last ones)
            unusable(False, self.wrong_fields, index, f"{self.name}:{index + 1}: {len(fields)} field(s), expected "
                     f"{len(self.fields)} ({', '.join(self.fields)})")
            return None
        own = fields[:-guides]
        inputs = self.sources.read(index, own[0] if len(own) == 1 else own)
        # every guide read, whatever the input or the others hold: each warns of its own problems
        items = {guide.stream: guide.read(index, raw) for guide, raw in zip(self.guides, fields[-guides:])}
        read = {stream: item for stream, item in items.items() if item is not None}
        if inputs is None or len(read) < len(items):
            return None
        return {**inputs, **read}

    def finish(self, chunk: Sequence[Optional[Inputs]]) -> None:
        self.sources.finish(chunk)

    def labels(self, inputs: Inputs) -> dict[str, list[str]]:
        return self.sources.labels({stream: item for stream, item in inputs.items() if stream not in self.optional})
