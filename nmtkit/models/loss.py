"""Token-level cross-entropy with label smoothing, fused for speed on CPU.

The forward pass computes the softmax once and keeps ``softmax - target distribution``
as the gradient, so the backward pass is one multiplication instead of a second pass over
the ``[N, V]`` logits (PyTorch's ``log_softmax`` backward is single-threaded on CPU). The
log-sum-exp comes from the gold token's probability rather than another pass.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable


class _SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, target: torch.Tensor, ignore_index: int, smoothing: float):
        logits = logits.float()
        grad = torch.softmax(logits, dim=-1)  # one pass; it is also the gradient's main term
        keep = (target != ignore_index).unsqueeze(1)
        gold = logits.gather(1, target.unsqueeze(1))
        p_gold = grad.gather(1, target.unsqueeze(1))
        # log-sum-exp from the gold token: lse = x_gold - log p_gold, exact where p_gold has not underflowed
        lse = gold - torch.log(p_gold)
        tiny = p_gold < 1e-30
        if tiny.any():
            rows = tiny.squeeze(1).nonzero().squeeze(1)
            lse[rows] = torch.logsumexp(logits[rows], dim=-1, keepdim=True)
        nll = lse - gold
        plain = nll.masked_fill(~keep, 0).sum()  # -Σ log p(gold): what perplexity is made of
        loss = plain.clone()  # the one output with a gradient
        if smoothing > 0:
            uniform = lse - logits.mean(dim=-1, keepdim=True)
            loss = ((1 - smoothing) * nll + smoothing * uniform).masked_fill(~keep, 0).sum()
        if smoothing > 0:
            grad.sub_(smoothing / grad.size(1))
        grad.scatter_add_(1, target.unsqueeze(1), torch.full_like(gold, -(1 - smoothing)))
        grad.masked_fill_(~keep, 0)
        ctx.save_for_backward(grad)
        ctx.mark_non_differentiable(plain)
        return loss, plain

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output: torch.Tensor, grad_plain: torch.Tensor):
        (grad,) = ctx.saved_tensors
        return grad.mul_(grad_output), None, None, None


def cross_entropy_and_nll(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = 0,
                          smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed cross-entropy of ``logits [..., V]`` against ``target [...]``, skipping ``ignore_index``, and the
    summed negative log-likelihood of the gold tokens (no gradient), of which the log's perplexity is made.

    With ``smoothing`` = ε the target distribution of the cross-entropy is (1 - ε) on the gold token plus ε spread
    uniformly over the whole vocabulary (Szegedy et al. 2016, PyTorch's ``label_smoothing``; fairseq spreads it over
    the other words); without, the two are equal.
    """
    return _SmoothedCrossEntropy.apply(logits.reshape(-1, logits.size(-1)), target.reshape(-1), ignore_index, smoothing)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = 0,
                  smoothing: float = 0.0) -> torch.Tensor:
    """The summed (smoothed) cross-entropy of :func:`cross_entropy_and_nll`."""
    return cross_entropy_and_nll(logits, target, ignore_index, smoothing)[0]
