"""--clip-norm and --weight-decay shape the update of every optimiser ``train --optimizer`` offers: the parameters
after one update equal a hand computation of that optimiser's first step from the clipped, decayed gradient."""

import pytest
import torch

from nmtkit.data.batching import examples_batch
from nmtkit.data.shards import Shard
from nmtkit.train.options import TRAIN_OPTIONS
from nmtkit.train.trainer import Trainer
from tests.train.test_trainer import config, write_reverse_corpus

OFFERED = next(o for o in TRAIN_OPTIONS if o.name == "optimizer").choices
LR = {"sgd": 0.5, "adam": 0.01, "adadelta": 1.0}


def first_step(name: str, p: torch.Tensor, g: torch.Tensor, lr: float, weight_decay: float) -> torch.Tensor:
    """``p`` after the optimiser's first step on the gradient ``g`` (float64), as make_optimizer configures it."""
    g = g + weight_decay * p  # L2 decay: the gradient of weight_decay/2 ||p||^2 added
    if name == "sgd":
        return p - lr * g
    if name == "adam":  # m_hat = g, v_hat = g^2 after bias correction, whatever the betas; eps 1e-8
        return p - lr * g / (g.abs() + 1e-8)
    if name == "adadelta":  # rho 0.95, eps 1e-6; the squared updates start at zero
        return p - lr * (1e-6 ** 0.5) / ((1 - 0.95) * g * g + 1e-6).sqrt() * g
    raise AssertionError(f"no hand computation for --optimizer {name}: add one")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_reverse_corpus(tmp_path_factory.mktemp("optim"), train=40, valid=4)


def one_update(corpus, save_dir, optimizer, clip_norm, weight_decay):
    """The parameters (float64) before and after one update of a fresh trainer, the gradient of that update's
    loss (computed beforehand, the same way) and the learning rate it used."""
    trainer = Trainer(config(data=str(corpus), save_dir=str(save_dir), optimizer=optimizer, lr=LR[optimizer],
                             clip_norm=clip_norm, weight_decay=weight_decay))
    data = Shard(trainer.corpus.shard_paths("train")[0])
    batch = examples_batch([(data, i) for i in range(16)])
    _, loss = trainer._loss(batch)
    (loss / batch.tgt_tokens).backward()
    model = trainer.model
    grads = {n: p.grad.double().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    before = {n: p.detach().double().clone() for n, p in model.named_parameters()}
    lr = trainer.optimizer.param_groups[0]["lr"]
    assert lr == LR[optimizer]
    trainer._update([batch])
    after = {n: p.detach().double() for n, p in model.named_parameters()}
    assert len(grads) == len(before), "every parameter has a gradient"
    return before, after, grads, lr


def expected(optimizer, before, grads, lr, clip_norm, weight_decay):
    total = torch.stack([g.norm() for g in grads.values()]).norm()
    scale = min(1.0, clip_norm / (float(total) + 1e-6)) if clip_norm > 0 else 1.0  # clip_grad_norm_'s
    return {n: first_step(optimizer, before[n], grads[n] * scale, lr, weight_decay) for n in before}


def largest_difference(a, b):
    return max(float((a[n] - b[n]).abs().max()) for n in a)


@pytest.mark.parametrize("optimizer", OFFERED)
@pytest.mark.parametrize("clip_norm, weight_decay", [(1e-6, 0.0), (0.0, 0.5), (1e-3, 0.5)],
                         ids=["clip-norm", "weight-decay", "both"])
def test_clip_norm_and_weight_decay_shape_the_update(corpus, tmp_path, optimizer, clip_norm, weight_decay):
    before, after, grads, lr = one_update(corpus, tmp_path, optimizer, clip_norm, weight_decay)
    want = expected(optimizer, before, grads, lr, clip_norm, weight_decay)
    for n in before:
        torch.testing.assert_close(after[n], want[n], rtol=1e-5, atol=1e-6, msg=lambda m, n=n: f"{n}: {m}")
    # the options make a difference far beyond the tolerance, each on its own: a run ignoring one would fail above
    if clip_norm:
        assert largest_difference(want, expected(optimizer, before, grads, lr, 0.0, weight_decay)) > 1e-4
    if weight_decay:
        assert largest_difference(want, expected(optimizer, before, grads, lr, clip_norm, 0.0)) > 1e-4
