"""A small CNN trained on the emoji training images, whose last convolutional layer gives captioning features:
the alternative to a randomly initialised VGG16 (no ImageNet weights can be installed here).

The network (4 conv blocks: 32, 64, 128, 256 channels, each halving the picture) is trained to predict which words
of the training vocabulary an image's caption holds (multi-label, binary cross-entropy on the mean of its grid),
on the training split only. Its 7 x 7 x 256 grid at 112 px is then written for each split as features
``[images, 49, 256]`` (float16 .npy, in the order of the split's list) for ``preprocess --features``.

Usage: emoji_cnn.py EMOJI_DIR OUT_DIR [EPOCHS]   (prints the loss per epoch and the dev word F1)
"""
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from nmtkit.data.images import load_image, read_captions, read_image_list

SIZE, BATCH = 112, 64


def network() -> nn.Sequential:
    layers: list[nn.Module] = []
    channels = 3
    for width in (32, 64, 128, 256):
        layers += [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2)]
        channels = width
    return nn.Sequential(*layers)


def main(emoji: str, out: str, epochs: str = "12") -> None:
    torch.manual_seed(1)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    root, target = Path(emoji), Path(out)
    target.mkdir(parents=True, exist_ok=True)
    captions = read_captions(target / "captions.tsv")
    names = {s: read_image_list(root / "splits" / f"{s}.txt") for s in ("train", "dev", "test")}
    images = {s: torch.stack([load_image(root / "images" / n, SIZE) for n in ns]) for s, ns in names.items()}
    words = sorted({w for n in names["train"] for c in captions[n] for w in c.split()})
    index = {w: i for i, w in enumerate(words)}

    def labels(split: str) -> torch.Tensor:
        y = torch.zeros(len(names[split]), len(words))
        for row, n in enumerate(names[split]):
            for w in captions[n][0].split():
                if w in index:
                    y[row, index[w]] = 1
        return y

    cnn, head = network(), nn.Linear(256, len(words))
    optimiser = torch.optim.Adam([*cnn.parameters(), *head.parameters()], lr=2e-3)
    x, y = images["train"], labels("train")
    for epoch in range(int(epochs)):
        cnn.train()
        start, total = time.perf_counter(), 0.0
        for batch in torch.randperm(len(x)).split(BATCH):
            logits = head(cnn(x[batch]).mean((2, 3)))
            loss = nn.functional.binary_cross_entropy_with_logits(logits, y[batch], reduction="sum") / len(batch)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * len(batch)
        cnn.eval()
        with torch.no_grad():
            predicted = head(cnn(images["dev"]).mean((2, 3))) > 0
        gold = labels("dev") > 0
        tp = float((predicted & gold).sum())
        f1 = 2 * tp / max(float(predicted.sum() + gold.sum()), 1.0)
        print(f"epoch {epoch + 1}: train loss {total / len(x):.3f}, dev word F1 {f1:.3f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    with torch.no_grad():
        for split, batch in images.items():
            grid = torch.cat([cnn(part) for part in batch.split(BATCH)])  # [N, 256, 7, 7]
            np.save(target / f"cnn.{split}.npy", grid.flatten(2).transpose(1, 2).numpy().astype(np.float16))


if __name__ == "__main__":
    main(*sys.argv[1:])
