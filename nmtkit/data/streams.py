"""A corpus' named streams: each text (with a vocabulary) or features, and their sizes.

Model builders receive this (with the vocabularies) instead of two vocabulary sizes, so a
model over several sources or over image features reads what it needs from it; checkpoints
store it, so a model is rebuilt without its corpus.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Mapping

from nmtkit.errors import NmtkitError

TOKENS, FEATURES = "tokens", "features"
KINDS = (TOKENS, FEATURES)
TARGET = "tgt"


@dataclass(frozen=True)
class StreamInfo:
    """One stream: ``kind`` tokens (``size`` = vocabulary size) or features (``size`` = feature dimension)."""

    kind: str
    size: int
    lang: str = ""


@dataclass(frozen=True)
class CorpusMeta:
    """The streams of a corpus by name; ``tgt`` is the target, every other stream an input."""

    streams: Mapping[str, StreamInfo]

    def __post_init__(self) -> None:
        bad = [n for n, s in self.streams.items() if s.kind not in KINDS]
        if bad:
            raise NmtkitError(f"stream {bad[0]!r}: unknown kind {self.streams[bad[0]].kind!r} (known: {', '.join(KINDS)})")

    @classmethod
    def text(cls, src_size: int, tgt_size: int, src_lang: str = "", tgt_lang: str = "") -> "CorpusMeta":
        """A plain translation corpus: one source text stream ``src`` and the target."""
        return cls({"src": StreamInfo(TOKENS, src_size, src_lang), TARGET: StreamInfo(TOKENS, tgt_size, tgt_lang)})

    @property
    def target(self) -> StreamInfo:
        return self.streams[TARGET]

    @property
    def inputs(self) -> dict[str, StreamInfo]:
        return {n: s for n, s in self.streams.items() if n != TARGET}

    def translation_sizes(self, arch: str) -> tuple[int, int]:
        """Source and target vocabulary sizes, for an architecture that reads the text stream ``src``."""
        self.require(arch, src=TOKENS)
        return self.streams["src"].size, self.target.size

    def require(self, arch: str, **kinds: str) -> None:
        """Check that the corpus has the input streams ``name=kind`` an architecture reads."""
        for name, kind in kinds.items():
            have = self.streams.get(name)
            if have is None or have.kind != kind:
                found = ", ".join(f"{n} ({s.kind})" for n, s in self.inputs.items()) or "none"
                raise NmtkitError(f"--arch {arch} reads a {kind} stream named {name!r}; the corpus has: {found}",
                                  exit_code=2)

    def state(self) -> dict:
        """Plain values, as checkpoints store them."""
        return {name: asdict(s) for name, s in self.streams.items()}

    @classmethod
    def from_state(cls, state: Mapping[str, Mapping]) -> "CorpusMeta":
        """The inverse of :meth:`state`."""
        return cls({name: StreamInfo(**s) for name, s in state.items()})
