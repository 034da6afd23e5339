"""Export of ``transformer`` checkpoints to CTranslate2, built with the ``ctranslate2`` package's own Transformer
specification (the optional extra ``nmtkit[ctranslate2]``).

nmtkit's layers map one to one onto the specification's: fused q/k/v projections of self-attention, a
query and a fused key/value projection of the attention over the encoder, a layer normalisation per
sublayer (before it with pre-norm, after the residual sum with post-norm), embeddings scaled by
sqrt(d_model). Positions are exported as a table (sinusoidal ones computed by nmtkit's own formula),
and the source gets its ``</s>`` from the model's configuration, as nmtkit appends it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from nmtkit.data.folders import atomic_folder, check_output_folder
from nmtkit.data.text import PathLike
from nmtkit.data.vocab import Vocab
from nmtkit.errors import NmtkitError
from nmtkit.models.seq2seq import Seq2Seq
from nmtkit.models.transformer import DecoderStack, Sublayers, Transformer

EXPORT = "CTranslate2 model folder"


def _require_ctranslate2() -> None:
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        raise NmtkitError("--format ctranslate2 needs the ctranslate2 package: pip install 'nmtkit[ctranslate2]'",
                          exit_code=2) from None


def _numpy(t: torch.Tensor):
    return t.detach().float().cpu().numpy()


def _linear(spec, layer: torch.nn.Linear) -> None:
    spec.weight = _numpy(layer.weight)
    if layer.bias is not None:
        spec.bias = _numpy(layer.bias)


def _norm(spec, norm: torch.nn.Module) -> None:
    spec.gamma, spec.beta = _numpy(norm.weight), _numpy(norm.bias)


def _norms(specs: list, sub: Sublayers) -> None:
    for spec, norm in zip(specs, sub.norms):
        _norm(spec, norm)


def transformer_spec(model: Transformer, src_tokens: list[str], tgt_tokens: list[str], positions: int):
    """The CTranslate2 ``TransformerSpec`` holding ``model``'s weights and vocabularies."""
    _require_ctranslate2()
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ts

    decoder: DecoderStack = model.decoder
    spec = ts.TransformerSpec.from_config((len(model.encoder), len(decoder.layers)),
                                          model.encoder[0].attention.heads, pre_norm=model.pre_norm,
                                          activation=common_spec.Activation.RELU)
    table = _numpy(model.positions(positions, 0, torch.device("cpu")))
    for side, emb in ((spec.encoder, model.src_emb), (spec.decoder, model.tgt_emb)):
        (side.embeddings[0] if isinstance(side.embeddings, list) else side.embeddings).weight = _numpy(emb.weight)
        side.scale_embeddings = True
        side.position_encodings.encodings = table
    if model.pre_norm:
        _norm(spec.encoder.layer_norm, model.enc_norm)
        _norm(spec.decoder.layer_norm, decoder.norm)
    for s, layer in zip(spec.encoder.layer, model.encoder):
        _linear(s.self_attention.linear[0], layer.attention.qkv)
        _linear(s.self_attention.linear[1], layer.attention.out)
        _linear(s.ffn.linear_0, layer.ffn.inner)
        _linear(s.ffn.linear_1, layer.ffn.outer)
        _norms([s.self_attention.layer_norm, s.ffn.layer_norm], layer.sub)
    for s, layer in zip(spec.decoder.layer, decoder.layers):
        _linear(s.self_attention.linear[0], layer.self_attention.qkv)
        _linear(s.self_attention.linear[1], layer.self_attention.out)
        _linear(s.attention.linear[0], layer.memory_attention.q)
        _linear(s.attention.linear[1], layer.memory_attention.kv)
        _linear(s.attention.linear[2], layer.memory_attention.out)
        _linear(s.ffn.linear_0, layer.ffn.inner)
        _linear(s.ffn.linear_1, layer.ffn.outer)
        _norms([s.self_attention.layer_norm, s.attention.layer_norm, s.ffn.layer_norm], layer.sub)
    _linear(spec.decoder.projection, model.output)
    spec.config.add_source_eos = True
    spec.register_source_vocabulary(src_tokens)
    spec.register_target_vocabulary(tgt_tokens)
    return spec


def export_ctranslate2(model: Seq2Seq, src_vocab: Vocab, tgt_vocab: Vocab, config: dict, output: PathLike,
                       quantization: str = "float32", force: bool = False, inputs: Sequence[PathLike] = ()) -> Path:
    """Write ``model`` (a ``transformer``, with its vocabularies and config) as a CTranslate2 model folder, with its
    SentencePiece models if any; the folder appears under its name only when complete. With ``force`` it replaces
    an earlier export, never a folder holding anything else or one of ``inputs`` (the checkpoint)."""
    arch = config["arch"]
    if type(model) is not Transformer:
        raise NmtkitError(f"--format ctranslate2: CTranslate2 has no equivalent of --arch {arch}; only transformer "
                          "models are exported", exit_code=2)
    output = Path(output)
    check_output_folder(output, EXPORT, force, "-o", "--force", inputs)
    tokens = lambda v: v.id_to_token(range(len(v)))
    spec = transformer_spec(model, tokens(src_vocab), tokens(tgt_vocab), config.get("max_positions", 1024))
    spec.validate()
    spec.optimize(quantization=quantization)
    with atomic_folder(output, EXPORT, force, "-o", "--force", inputs) as tmp:
        spec.save(str(tmp))
        for name, vocab in (("source", src_vocab), ("target", tgt_vocab)):
            proto = getattr(vocab, "proto", None)
            if proto is not None:
                (tmp / f"{name}.spm.model").write_bytes(proto)
    return output
