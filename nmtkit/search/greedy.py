"""Greedy decoding, batched; finished sentences leave the batch. With a ``pick`` other than the most probable
token, the same loop samples (:class:`~nmtkit.search.sampling.Sampler`)."""
from __future__ import annotations

from typing import Callable, Optional

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.seq2seq import Seq2Seq, output_lengths
from nmtkit.search.hypothesis import Hypothesis, append_attention, collect_attention
from nmtkit.search.top_k import top_k
from nmtkit.search.unwritten import mask_unwritten

Pick = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]  #: log-probabilities -> ([rows, 1] lp, ids)


@torch.no_grad()
def greedy_search(model: Seq2Seq, batch: Batch, max_len_a: float = 1.5, max_len_b: int = 10,
                  attention: bool = False, pick: Optional[Pick] = None,
                  length_penalty: float = 1.0) -> list[list[Hypothesis]]:
    """The most probable token at each step (or the one ``pick`` takes of the step's log-probabilities), for every
    sentence of ``batch`` (one hypothesis each), scored as beam search scores: log-probability / length^alpha
    (``alpha = length_penalty``; ``</s>`` counted), so that a line's score does not depend on which search ran."""
    n = batch.size
    device = batch.device
    state = model.encode(batch)
    limit = output_lengths(model, batch, max_len_a, max_len_b)
    active = torch.arange(n, device=device)
    prev = torch.full((n,), BOS, dtype=torch.long, device=device)
    tokens = torch.zeros((n, 0), dtype=torch.long, device=device)
    logprob = torch.zeros(n, device=device)
    history: dict[str, torch.Tensor] = {}
    results: list[list[Hypothesis]] = [[] for _ in range(n)]
    nearest_limit = int(limit.min())  # of the live sentences, on the host: a step reads only ``done.any()``
    t = 0
    while active.numel():
        lp, state, attn = model.decode_step(prev, state)
        mask_unwritten(lp)
        if attention:
            history = append_attention(history, attn)
        if nearest_limit <= t:
            forced = limit[active] <= t
            lp[forced] = torch.where(torch.arange(lp.size(1), device=lp.device) == EOS, lp[forced], -torch.inf)
        best, prev = pick(lp) if pick else top_k(lp, 1)
        best, prev = best[:, 0], prev[:, 0]
        logprob += best
        tokens = torch.cat([tokens, prev.unsqueeze(1)], 1)
        t += 1
        done = prev == EOS
        if done.any():
            rows = done.nonzero().flatten()
            for row, i, words, score in zip(rows.tolist(), active[rows].tolist(), tokens[rows, :-1].tolist(),
                                            logprob[rows].tolist()):  # (t: the length, </s> counted)
                results[i] = [Hypothesis(words, score, score / t ** length_penalty if length_penalty else score,
                                         collect_attention(history, row, t))]
            keep = (~done).nonzero().flatten()
            active, prev, tokens, logprob = active[keep], prev[keep], tokens[keep], logprob[keep]
            state = state.reorder(keep)
            history = {k: v[keep] for k, v in history.items()}
            nearest_limit = int(limit[active].min()) if active.numel() else 0
    return results
