"""Validation BLEU per epoch of training runs, as one figure (multi-source-attention.txt Fig. 1).

Usage: learning_curves.py OUT.png TRAIN_EXAMPLES BATCH_SIZE NAME=RUN/train.jsonl ...
An epoch is TRAIN_EXAMPLES / BATCH_SIZE updates; with TRAIN_EXAMPLES 0 the curves are drawn against updates. Runs given under one NAME (seeds) are drawn as their mean with
the range between the lowest and highest as a band. Prints each run's curve and each NAME's mean.
"""
import json
import sys

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(out: str, examples: str, batch: str, *runs: str) -> None:
    """Draw the curves of ``runs`` (NAME=TRAIN.JSONL) into ``out``."""
    per_epoch = int(examples) / int(batch) if int(examples) else 1.0
    curves: dict[str, list[tuple[list[float], list[float]]]] = {}
    for spec in runs:
        name, _, path = spec.partition("=")
        valid = [r for r in map(json.loads, open(path)) if r["type"] == "valid"]
        epochs, bleu = [r["step"] / per_epoch for r in valid], [r["bleu"] for r in valid]
        curves.setdefault(name, []).append((epochs, bleu))
        print(f"{name} ({path}): " + ", ".join(f"{e:.1f}:{b:.1f}" for e, b in zip(epochs, bleu)))
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, seeds in curves.items():
        length = min(len(b) for _, b in seeds)
        epochs, bleu = seeds[0][0][:length], np.array([b[:length] for _, b in seeds])
        line, = ax.plot(epochs, bleu.mean(0), marker=".", label=f"{name} ({len(seeds)} seeds)")
        if len(seeds) > 1:
            ax.fill_between(epochs, bleu.min(0), bleu.max(0), color=line.get_color(), alpha=0.15)
        print(f"{name} mean: " + ", ".join(f"{e:.1f}:{b:.1f}" for e, b in zip(epochs, bleu.mean(0))))
    ax.set_xlabel("epochs" if int(examples) else "updates")
    ax.set_ylabel("validation BLEU")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(*sys.argv[1:])
