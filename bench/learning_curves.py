"""Validation BLEU per epoch of several training runs, as one figure (multi-source-attention.txt Fig. 1).

Usage: learning_curves.py OUT.png TRAIN_EXAMPLES BATCH_SIZE NAME=RUN/train.jsonl ...
(an epoch is TRAIN_EXAMPLES / BATCH_SIZE updates); also prints each run's curve.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out: str, examples: str, batch: str, *runs: str) -> None:
    per_epoch = int(examples) / int(batch)
    fig, ax = plt.subplots(figsize=(6, 4))
    for spec in runs:
        name, _, path = spec.partition("=")
        valid = [r for r in map(json.loads, open(path)) if r["type"] == "valid"]
        epochs, bleu = [r["step"] / per_epoch for r in valid], [r["bleu"] for r in valid]
        ax.plot(epochs, bleu, marker=".", label=name)
        print(f"{name}: " + ", ".join(f"{e:.1f}:{b:.1f}" for e, b in zip(epochs, bleu)))
    ax.set_xlabel("epochs")
    ax.set_ylabel("validation BLEU")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:])
