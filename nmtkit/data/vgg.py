"""VGG16's convolutional layers up to conv5_3 (Simonyan and Zisserman 2015): the image features of
show-attend-tell (target-target-attention.txt §4; Xu et al. 2015).

A 224 × 224 image gives conv5_3's activations (after its ReLU, before the last pooling) on a 14 × 14 grid:
196 vectors of 512, the annotation vectors a_i the decoder attends to. The layers sit at the indices of
torchvision's ``vgg16().features``, so the standard ImageNet weights file (torchvision's
``vgg16-397923af.pth``) loads by name; its classifier is not needed and is ignored. The file is read with
``torch.load(weights_only=True)``, which runs no code from it.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

from nmtkit.errors import NmtkitError

# channels of each conv layer, 0 a 2x2 max pooling: VGG16's configuration "D"
LAYERS = [64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512]
FEATURE_SIZE = 512
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet statistics the weights were trained with


class VGG16Features(nn.Module):
    """Images ``[B, 3, H, W]`` (RGB in [0, 1]) -> conv5_3 features ``[B, H/16 * W/16, 512]``, row by row."""

    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for width in LAYERS:
            if width == 0:
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(inplace=True)]
                channels = width
        self.features = nn.Sequential(*layers)
        self.mean: torch.Tensor
        self.std: torch.Tensor
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        grid = self.features((images - self.mean) / self.std)  # [B, 512, H/16, W/16]
        return grid.flatten(2).transpose(1, 2)

    def load_weights(self, path: Path) -> None:
        """Load torchvision's ``vgg16`` state dict from ``path`` (its ``features.*`` entries; ``classifier.*`` is
        ignored); an entry missing, unexpected or of another shape is a one-line error naming it."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # notes on the pickle protocol, not the user's concern
                state = torch.load(path, map_location="cpu", weights_only=True)
        except FileNotFoundError:
            raise NmtkitError(f"--cnn-weights {path}: no such file", exit_code=2) from None
        except Exception as e:  # torch.load's errors for a file that is not a state dict are of many kinds
            raise NmtkitError(f"--cnn-weights {path}: not a PyTorch state dict ({str(e).splitlines()[0]})",
                              exit_code=2) from None
        if not isinstance(state, dict):
            raise NmtkitError(f"--cnn-weights {path}: holds a {type(state).__name__}, not a state dict", exit_code=2)
        state = {k: v for k, v in state.items() if not k.startswith("classifier.")}
        own = self.state_dict()
        for name, tensor in own.items():
            if name not in state:
                raise NmtkitError(f"--cnn-weights {path}: no entry {name!r} (expected torchvision's vgg16 weights)",
                                  exit_code=2)
            got = state[name]
            if not isinstance(got, torch.Tensor) or got.shape != tensor.shape:
                shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
                raise NmtkitError(f"--cnn-weights {path}: entry {name!r} has shape {shape}, VGG16 needs "
                                  f"{tuple(tensor.shape)}", exit_code=2)
        extra = sorted(set(state) - set(own))
        if extra:
            raise NmtkitError(f"--cnn-weights {path}: unexpected entry {extra[0]!r} (expected torchvision's vgg16 "
                              "weights)", exit_code=2)
        self.load_state_dict({k: v.float() for k, v in state.items()})
