"""Loading a trained model for decoding and scoring, apart from training.

``translate``, ``score`` and the tools load models here; nothing here imports the trainer,
the optimisers or the distributed set-up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import torch

from nmtkit import __version__
from nmtkit.checkpoint import FOR_DECODING, checkpoint_meta, checkpoint_vocabs, first_mismatch, load_checkpoint
from nmtkit.data.output_form import TEXT, OutputForm
from nmtkit.data.streams import TARGET, TOKENS, CorpusMeta
from nmtkit.data.text import PathLike
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models import build_model, model_names
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.search.ensemble import Ensemble, StreamNames, normalised_weights


@dataclass
class LoadedModel:
    """A model in eval mode on its device, with what it was built from."""

    model: Seq2Seq
    vocabs: dict[str, Vocab]
    config: dict
    meta: CorpusMeta
    images: Optional[dict] = None  #: how the training corpus made image features (captioning models)
    output_form: OutputForm = TEXT  #: what the model's outputs are (text, or edit operations on an input)

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
    if ckpt["config"]["arch"] not in model_names():  # (plugins loaded)
        raise NmtkitError(f"{path}: a model of architecture {ckpt['config']['arch']!r}, which this nmtkit "
                          f"{__version__} does not have (it has {', '.join(model_names())})")
    model = build_model(ckpt["config"], meta, vocabs)
    mismatch = first_mismatch(model.state_dict(), ckpt["model"])
    if mismatch:
        raise NmtkitError(f"{path}: the weights do not fit the model its config describes: {mismatch}")
    model.load_state_dict(ckpt["model"])
    model.to(device or torch.device("cpu")).eval()
    return LoadedModel(model, vocabs, ckpt["config"], meta, ckpt.get("images"), OutputForm.of(ckpt))


def _reads_alike(first: LoadedModel, other: LoadedModel, stream: str) -> bool:
    """Whether two models make the same input of a line's field for ``stream``: the same vocabulary, or the same
    image features."""
    kind = first.meta.streams[stream].kind
    if other.meta.streams[stream].kind != kind:
        return False
    if kind != TOKENS:
        return first.images == other.images
    a, b = first.vocabs[stream], other.vocabs[stream]
    return len(a) == len(b) and a.id_to_token(range(len(a))) == b.id_to_token(range(len(b)))


def ensemble_of(members: Sequence[LoadedModel], paths: Sequence[str], weights: Optional[Sequence[float]] = None,
                attention_from: int = 0) -> LoadedModel:
    """Loaded models as one ensemble model: they must read the same inputs and share the target vocabulary (else a
    one-line error naming the model); the first member's vocabularies, corpus and records describe the ensemble."""
    first = members[0]
    streams: list[StreamNames] = []
    for k, (member, path) in enumerate(zip(members, paths)):
        if member.model.inputs != first.model.inputs:
            raise NmtkitError(f"-m {path}: a {member.config['arch']} model reading {', '.join(member.model.inputs)}; "
                              f"an ensemble's models read the same inputs ({paths[0]}: "
                              f"{', '.join(first.model.inputs)})", exit_code=2)
        if not _reads_alike(first, member, TARGET):
            raise NmtkitError(f"-m {path}: its target vocabulary differs from that of {paths[0]}; the models of an "
                              "ensemble share one target vocabulary", exit_code=2)
        if member.output_form != first.output_form:
            raise NmtkitError(f"-m {path}: outputs {member.output_form.describe()}, {paths[0]} "
                              f"{first.output_form.describe()}; an ensemble's models output the same", exit_code=2)
        truncated_alike = member.model.input_limit() == first.model.input_limit()
        shared = [s for s in member.model.inputs if _reads_alike(first, member, s)
                  and (truncated_alike or member.meta.streams[s].kind != TOKENS)]
        streams.append({s: s if k == 0 or s in shared else f"{s}@{k + 1}" for s in member.model.inputs})
    model = Ensemble([m.model for m in members], normalised_weights(weights, len(members)), streams, attention_from)
    return LoadedModel(model, first.vocabs, first.config, first.meta, first.images, first.output_form)

