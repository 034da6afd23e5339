"""The interface every model implements, which the trainer and the search rely on."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence, Union

import torch
from torch import nn

from nmtkit.data.batching import Batch
from nmtkit.errors import NmtkitError
from nmtkit.models.state import DecoderState

AttentionWeights = dict  # name ("source", "target", "encoders", ...) -> weights [B, ...]


#: a parameter group's module paths (:meth:`Seq2Seq.gradient_groups`): one dotted path, or several; ``*`` stands
#: for any one module name (``decoder.layers.*.ffn``: the feed-forward block of every layer)
Paths = Union[str, tuple[str, ...]]


@dataclass
class ModelOutput:
    """What a teacher-forced forward pass gives the trainer.

    ``logits [B, T, V]`` of ``batch.tgt_out``; ``attention`` by name, ``[B, T, ...]``;
    ``auxiliary``: ``(logits, gold)`` pairs of decoders trained jointly (the reverse decoder of
    rtatt/bitatt-rnn), whose cross-entropy is added to the loss; ``losses``: other terms added
    to the loss as they are (a regulariser, say), by name; ``state``: the encoded inputs the pass
    decoded from (as dropout left them), for :meth:`Seq2Seq.diagnostics`.
    """

    logits: torch.Tensor
    attention: AttentionWeights = field(default_factory=dict)
    auxiliary: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    losses: dict[str, torch.Tensor] = field(default_factory=dict)
    state: Optional[DecoderState] = None  #: the encoded inputs, where a model keeps them for its diagnostics


def max_lengths(lengths: torch.Tensor, a: float, b: int) -> torch.Tensor:
    """Longest output allowed per sentence: a·|x| + b tokens, with ``lengths`` |x| + 1 (``</s>`` counted); EOS excluded."""
    return (a * (lengths - 1).float() + b).floor().long().clamp(min=1)


class Seq2Seq(nn.Module):
    """A sequence-to-sequence model.

    - ``encode(batch)``: the initial :class:`DecoderState` for a batch of inputs.
    - ``decode_step(prev, state)``: log-probabilities ``[B, V]`` of the next token given the
      previous tokens ``[B]`` (a new tensor: the search adds to it in place), the new state, and
      this step's attention (name -> ``[B, ...]``).
    - ``forward(batch)``: the teacher-forced :class:`ModelOutput` for ``batch.tgt_in``.
    - ``score_logits(batch)``: teacher-forced logits of the target given the inputs alone, as
      decoding conditions them; perplexity (Eq. 13) is computed from these. The same as
      ``forward`` unless training conditions on the reference otherwise (R̃ of rtatt/bitatt-rnn).
    - ``max_output_len(batch, a, b)``: each sentence's output length limit; a·|x| + b over the
      model's first text input unless the model says otherwise (an image has no length).

    tests/models/test_contract.py holds every registered model to this interface.
    """

    #: Names (dotted suffixes) of the modules through which a component's output enters the rest of
    #: the network (target attention into the decoder's gates, say). A warm start zeroes the new ones,
    #: so that the model starts out computing what its checkpoint computed and learns to use the component.
    bridges: tuple[str, ...] = ()

    #: Whether the states of different batches, at different steps, merge into one (:meth:`DecoderState.merged`) that
    #: decodes every row as it would have apart: what continuous batching (:class:`nmtkit.search.beam.BeamSearch`)
    #: asks of a model. tests/models/test_contract.py holds every model that says so to it.
    merges_states: bool = False

    #: Whether ``forward`` traces to one graph for batches of every shape (no loop over time steps, no value read
    #: back to the host), so that ``train --compile`` compiles it once; others would be recompiled for every new
    #: batch shape, and train uncompiled. tests/test_compiling.py holds every model that says so to it.
    compiles_once: bool = False

    #: The input streams the model reads from a batch (``src``; ``src`` and ``mt`` for APE, ...).
    inputs: tuple[str, ...] = ("src",)

    #: Dotted names of the linear layers whose outputs are the logits of ``decode_step`` over the target vocabulary
    #: (what a lexical shortlist restricts).
    output_layers: tuple[str, ...] = ("output",)

    #: The option that sets :meth:`input_limit` and :meth:`output_limit`, for messages (``--max-positions``).
    limit_option: str = ""

    #: Names of the columns of attention kinds whose columns are not tokens (``encoders``: the parts of the
    #: memory), for attention files and their pictures.
    attention_labels: dict[str, tuple[str, ...]] = {}

    #: Whether ``forward`` and ``decode_step`` must give attention weights. A model may skip computing them
    #: when not (the Transformer's fused attention computes none); set it for a block with
    #: :meth:`attention_weights`. The search asks for them for attention files; training never does.
    weights_wanted: bool = False
    #: Whether :meth:`diagnostics` reads attention weights, which ``train --diagnostics`` then asks for
    diagnostics_read_weights: bool = False

    def choose_attention(self, layer: Optional[int] = None, head: Optional[int] = None) -> None:
        """Which attention weights the model gives when asked: those of a layer and head, for models that have
        several (the Transformers); ``None`` leaves the model's default."""
        if layer is not None or head is not None:
            raise NmtkitError(f"--attention-layer/--attention-head: {type(self).__name__} has one attention to give, "
                              "no layers or heads to choose from", exit_code=2)

    @contextmanager
    def attention_weights(self, wanted: bool) -> Iterator[None]:
        """Within the block, attention weights are computed only if ``wanted``."""
        previous, self.weights_wanted = self.weights_wanted, wanted
        try:
            yield
        finally:
            self.weights_wanted = previous

    def init_parameters(self, param_init: float, tied: Sequence[tuple[nn.Linear, nn.Embedding]] = ()) -> None:
        """Uniform [-param_init, param_init] init (0: keep PyTorch's), zero padding embeddings, tie output
        layers to embeddings (``tied``: pairs of output layer and embedding)."""
        if param_init > 0:
            for p in self.parameters():
                nn.init.uniform_(p, -param_init, param_init)
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
        for output, embedding in tied:
            output.weight = embedding.weight

    def forward(self, batch: Batch) -> ModelOutput:
        raise NotImplementedError

    def score_logits(self, batch: Batch) -> torch.Tensor:
        """Teacher-forced logits ``[B, T, V]`` of ``batch.tgt_out`` given the inputs, conditioned as in decoding."""
        return self(batch).logits

    def encode(self, batch: Batch) -> DecoderState:
        raise NotImplementedError

    def decode_step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState, AttentionWeights]:
        raise NotImplementedError

    def output_ids(self, tokens: Sequence[int]) -> list[int]:
        """The target vocabulary's ids of the tokens the search produced from ``decode_step``'s outputs: the same
        ids, unless the model's outputs index something else (a shortlist's positions)."""
        return list(tokens)

    def max_output_len(self, batch: Batch, a: float, b: int) -> torch.Tensor:
        """The longest output ``[B]`` each sentence may get (``</s>`` excluded): a·|x| + b over the model's first text
        input (a model without one overrides this)."""
        return max_lengths(next(batch[n] for n in self.inputs if batch[n].is_tokens).lengths, a, b)

    def gradient_groups(self) -> dict[str, Paths]:
        """The parameter groups whose gradient norms ``train --diagnostics`` logs: name -> the dotted module path (or
        paths, ``*`` standing for any one module name) their parameters' names start with. Default: the model's
        top-level modules."""
        return {name: name for name, _ in self.named_children()}

    def diagnostics(self, batch: Batch, output: ModelOutput) -> dict[str, float]:
        """Statistics of a teacher-forced pass ``output`` of ``batch`` that ``train --diagnostics`` logs (say, the
        attention each encoder receives), by name; default none."""
        return {}

    def input_limit(self) -> Optional[int]:
        """The most tokens (``</s>`` excluded) of a text input the model can read, if it has a limit (a table of
        positions); None: any length."""
        return None

    def output_limit(self) -> Optional[int]:
        """The most tokens (``</s>`` excluded) the model can output or be trained on, if it has a limit."""
        return None


def output_lengths(model: Seq2Seq, batch: Batch, a: float, b: int) -> torch.Tensor:
    """Each sentence's output length limit ``[B]`` for the search: a·|x| + b (:meth:`Seq2Seq.max_output_len`),
    within what the model can output at all."""
    limit = model.max_output_len(batch, a, b)
    most = model.output_limit()
    return limit if most is None else limit.clamp(max=most)
