"""How much multi-source checkpoints use each encoder, in evaluation mode on the first dev batches (issue 32):

- the attention each encoder receives, every encoder present: the mean over the real target positions of each
  encoder's mass (flat: its states' weights summed; hierarchical: β), as `train --diagnostics` logs it;
- the dev perplexity (teacher-forced) with the inputs as they are, and with one input incongruent: each sentence
  given the next sentence's input of that stream (Elliott 2018's adversarial evaluation). A model that uses an
  input loses much with it incongruent; one that ignores it, nothing.

    python bench/encoder_mass.py CORPUS CHECKPOINT... [--batches 5]
"""
from __future__ import annotations

import argparse
import math
from typing import Optional

import torch
import torch.nn.functional as F

from nmtkit.data.batching import Batch, Stream, TrainingBatches
from nmtkit.data.shards import Corpus
from nmtkit.data.vocab import PAD
from nmtkit.inference import load_model


def incongruent(batch: Batch, name: Optional[str]) -> Batch:
    """``batch`` with each sentence's input ``name`` taken from the next sentence (none changed: None)."""
    if name is None:
        return batch
    stream = batch[name]
    moved = Stream(stream.data.roll(-1, 0), stream.lengths.roll(-1, 0))
    return Batch({**batch.inputs, name: moved}, batch.tgt_in, batch.tgt_out)


def dev_perplexity(model: torch.nn.Module, batches: list[Batch], name: Optional[str]) -> float:
    """The teacher-forced perplexity of ``batches`` with input ``name`` incongruent (None: as they are)."""
    nll, tokens = 0.0, 0
    for batch in batches:
        logits = model(incongruent(batch, name)).logits.float()
        nll += float(F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD, reduction="sum"))
        tokens += int((batch.tgt_out != PAD).sum())
    return math.exp(nll / tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help="the preprocessed corpus the models trained on")
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--batches", type=int, default=5, help="dev batches of 64 sentences [default: 5]")
    args = parser.parse_args()
    shards = Corpus.open(args.corpus).shard_paths("valid")
    batches = list(TrainingBatches(shards, 64, seed=1, max_len=80).epoch(1))[:args.batches]
    for path in args.checkpoints:
        model = load_model(path, torch.device("cpu")).model.eval()
        with torch.no_grad():
            stats = [model.diagnostics(batch, model(batch)) for batch in batches]
            ppl = {name: dev_perplexity(model, batches, name) for name in (None, *model.inputs)}
        masses = {key: sum(s[key] for s in stats) / len(stats) for key in stats[0] if key.startswith("mass.")}
        print(path, " ".join(f"{key} {value:.3f}" for key, value in masses.items()),
              f"dev ppl {ppl[None]:.2f},", ", ".join(f"{name} incongruent {value:.2f}" for name, value in ppl.items()
                                                    if name is not None))


if __name__ == "__main__":
    main()
