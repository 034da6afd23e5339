"""The attention each encoder of multi-source checkpoints receives in evaluation mode, every encoder present (issue
32): the mean over the real target positions of the first dev batches of each encoder's mass (flat: its states'
weights summed; hierarchical: β), as `train --diagnostics` logs it.

    python bench/encoder_mass.py CORPUS CHECKPOINT... [--batches 5]
"""
from __future__ import annotations

import argparse

import torch

from nmtkit.data.batching import TrainingBatches
from nmtkit.data.shards import Corpus
from nmtkit.inference import load_model


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
        masses = {key: sum(s[key] for s in stats) / len(stats) for key in stats[0] if key.startswith("mass.")}
        print(path, " ".join(f"{key} {value:.3f}" for key, value in masses.items()))


if __name__ == "__main__":
    main()
