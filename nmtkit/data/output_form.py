"""What a model's target sequences are: the one seam between a task's output representation and the commands that
make, validate, translate and score it.

A corpus records its form in its manifest's ``options`` and a checkpoint copies the record (``CORPUS_RECORDS``);
preprocessing turns references into targets with :meth:`OutputForm.target`, and validation, ``translate`` and
``score`` turn outputs back into text with :meth:`OutputForm.text`, without knowing which form they hold. Two forms
exist: text, and the edit operations of automatic post-editing on the words of one input stream
(multi-source-attention.txt §4.2; :mod:`nmtkit.data.edits`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from nmtkit.data.edits import KEEP, apply_edits, edit_operations
from nmtkit.data.vocab import EOS, UNK, Vocab

EDITS_RECORD = "ape_edits"  #: the record's key in a manifest's options and a checkpoint (``preprocess --ape-edits``)


@dataclass(frozen=True)
class OutputForm:
    """Text (``edits`` None), or the edit operations turning the words of the input stream ``edits`` into the
    output text."""

    edits: Optional[str] = None

    @classmethod
    def of(cls, records: Mapping) -> "OutputForm":
        """The form a manifest's ``options`` or a checkpoint records."""
        return cls(records.get(EDITS_RECORD))

    def record(self) -> dict:
        """What a manifest's ``options`` and a checkpoint hold of this form (nothing for text)."""
        return {EDITS_RECORD: self.edits} if self.edits else {}

    @property
    def reads(self) -> tuple[str, ...]:
        """The input streams whose raw text turns an output into text (none for text)."""
        return (self.edits,) if self.edits else ()

    def describe(self) -> str:
        return f"edit operations on its input {self.edits}" if self.edits else "text"

    def unchanged_ids(self, vocab: Vocab) -> list[int]:
        """The target ids that leave the edited input as it is: ``<keep>`` (if the vocabulary has it) and the end of
        the sequence (the input's words after the last operation are kept); none for text."""
        if not self.edits:
            return []
        return [i for i in vocab.encode(KEEP) if i != UNK] + [EOS]

    def text(self, output: str, inputs: Mapping[str, str]) -> str:
        """An output (decoded target tokens) as text, given the raw text of the line's inputs that :attr:`reads`
        names."""
        return apply_edits(inputs[self.edits], output) if self.edits else output

    def target(self, reference: str, inputs: Mapping[str, str]) -> str:
        """The target sequence, as text to segment, of a reference given the line's inputs (:attr:`reads`);
        ValueError for a reference this form cannot express."""
        return edit_operations(inputs[self.edits], reference) if self.edits else reference

    def texts(self, outputs: Sequence[str], inputs: Mapping[str, Sequence[str]]) -> list[str]:
        """:meth:`text` of each output, with the lines of the input files ``inputs`` (at least as many)."""
        if not self.edits:
            return list(outputs)
        short = [s for s, lines in inputs.items() if len(lines) < len(outputs)]
        if short:
            raise ValueError(f"{len(outputs)} outputs for {len(inputs[short[0]])} lines of the input {short[0]}")
        return [self.text(out, {s: lines[k] for s, lines in inputs.items()}) for k, out in enumerate(outputs)]


TEXT = OutputForm()
