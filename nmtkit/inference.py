"""Loading a trained model for decoding and scoring, apart from training.

``translate``, ``score`` and the tools load models here; nothing here imports the trainer,
the optimisers or the distributed set-up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from nmtkit.checkpoint import FOR_DECODING, checkpoint_meta, checkpoint_vocabs, first_mismatch, load_checkpoint
from nmtkit.data.streams import TARGET, CorpusMeta
from nmtkit.data.text import PathLike
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model
from nmtkit.models.seq2seq import Seq2Seq


@dataclass
class LoadedModel:
    """A model in eval mode on its device, with what it was built from."""

    model: Seq2Seq
    vocabs: dict[str, Vocab]
    config: dict
    meta: CorpusMeta
    images: Optional[dict] = None  #: how the training corpus made image features (captioning models)
    ape_edits: Optional[str] = None  #: the input stream whose words the output's edit operations edit (APE models)

    @property
    def tgt_vocab(self) -> Vocab:
        return self.vocabs[TARGET]

    def text_vocab(self, stream: str = "src") -> Vocab:
        """The vocabulary of the model's input text stream, for a command that reads one text input."""
        if tuple(self.model.inputs) != (stream,) or stream not in self.vocabs:
            raise NmtkitError(f"this {self.config['arch']} model reads the inputs {', '.join(self.model.inputs)}; "
                              f"this command reads one text input ({stream})", exit_code=2)
        return self.vocabs[stream]


def load_model(path: PathLike, device: Optional[torch.device] = None) -> LoadedModel:
    """The model of a checkpoint, built as it was trained and loaded with its weights, in eval mode."""
    ckpt = load_checkpoint(path, FOR_DECODING)
    vocabs, meta = checkpoint_vocabs(ckpt), checkpoint_meta(ckpt)
    model = build_model(ckpt["config"], meta, vocabs)
    mismatch = first_mismatch(model.state_dict(), ckpt["model"])
    if mismatch:
        raise NmtkitError(f"{path}: the weights do not fit the model its config describes: {mismatch}")
    model.load_state_dict(ckpt["model"])
    model.to(device or torch.device("cpu")).eval()
    return LoadedModel(model, vocabs, ckpt["config"], meta, ckpt.get("images"), ckpt.get("ape_edits"))
