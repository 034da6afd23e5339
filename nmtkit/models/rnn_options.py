"""The options every RNN encoder-decoder of nmtkit has (rnnsearch and its family, luong)."""
from __future__ import annotations

from nmtkit.config import POSITIVE, PROBABILITY, Option, Range


def rnn_options(encoder: str, decoder: str, tie_needs: str) -> list[Option]:
    """The options every RNN encoder-decoder has, their help naming its ``encoder`` and ``decoder`` RNNs and
    what tied embeddings need."""
    return [
        Option("emb_size", 256, "word embedding size (source and target)", allows=POSITIVE),
        Option("enc_size", 256, f"encoder {encoder} size per direction", allows=POSITIVE),
        Option("dec_size", 512, f"decoder {decoder} size", allows=POSITIVE),
        Option("dropout", 0.2, "dropout on embeddings, between stacked layers and before the output layer",
               allows=PROBABILITY, training_only=True),
        Option("tie_embeddings", False, f"share the target embeddings with the output layer (needs {tie_needs})"),
        Option("param_init", 0.1, "initialise parameters uniformly in [-x, x] (0: PyTorch defaults)",
               allows=Range(0, 1), training_only=True),
    ]


def check_tied_readout(tie_embeddings: bool, readout_size: int, emb_size: int) -> None:
    """Tied embeddings of a deep-output decoder (rnnsearch's family, multi-source): the output layer's weights are
    the target embeddings, so the readout is of their size; else a ValueError naming both options."""
    if tie_embeddings and readout_size != emb_size:
        raise ValueError(f"--tie-embeddings needs --readout-size ({readout_size}) equal to --emb-size ({emb_size})")
