"""Beam search, batched over sentences and beams; written once for every model.

Each step expands the K live hypotheses of every sentence, takes the 2K best candidates,
finalises those that end with ``</s>`` among the first K, and keeps the K best others.
A sentence is done when it has K finished hypotheses (or reaches its length limit, where
``</s>`` is forced); done sentences leave the batch. Finished hypotheses are ranked by
log-probability / length^alpha (``alpha = length_penalty``; 0 ranks by raw probability).

A step reads one pair of flags from the device (whether any candidate finished, whether any
sentence is done); it reads more only in steps where hypotheses finish. Length limits are
checked against a host copy of the nearest one.
"""
from __future__ import annotations

import torch

from nmtkit.data.batching import Batch
from nmtkit.data.vocab import BOS, EOS
from nmtkit.models.seq2seq import Seq2Seq, output_lengths
from nmtkit.search.hypothesis import Hypothesis, append_attention, collect_attention
from nmtkit.search.top_k import top_k


@torch.no_grad()
def beam_search(model: Seq2Seq, batch: Batch, beam_size: int = 5, n_best: int = 1, max_len_a: float = 1.5,
                max_len_b: int = 10, length_penalty: float = 1.0, attention: bool = False) -> list[list[Hypothesis]]:
    """The ``n_best`` hypotheses of each sentence of ``batch``, best first."""
    n, k = batch.size, beam_size
    device = batch.device
    n_best = min(n_best, k)
    state = model.encode(batch).reorder(torch.arange(n, device=device).repeat_interleave(k))
    limit = output_lengths(model, batch, max_len_a, max_len_b)
    sent = torch.arange(n, device=device)  # original index of each live sentence
    scores = torch.full((n, k), -torch.inf, device=device)
    scores[:, 0] = 0.0  # all beams start identical: expand only the first
    prev = torch.full((n * k,), BOS, dtype=torch.long, device=device)
    tokens = torch.zeros((n * k, 0), dtype=torch.long, device=device)
    history: dict[str, torch.Tensor] = {}
    finished: list[list[Hypothesis]] = [[] for _ in range(n)]
    count = torch.zeros(n, dtype=torch.long, device=device)  # finished hypotheses of each sentence
    nearest_limit = int(limit.min())  # of the live sentences, on the host
    t = 0
    while sent.numel():
        b = sent.numel()
        lp, state, attn = model.decode_step(prev, state)
        if attention:
            history = append_attention(history, attn)
        vocab = lp.size(1)
        lp = lp.view(b, k, vocab)
        forced = limit[sent] <= t
        if nearest_limit <= t:
            eos_only = torch.arange(vocab, device=device) == EOS
            lp[forced] = torch.where(eos_only, lp[forced], -torch.inf)
        t += 1
        cand, index = top_k(lp.add_(scores.unsqueeze(2)).view(b, k * vocab), 2 * k)  # (lp is the step's own)
        origin, word = index // vocab, index % vocab
        is_eos = word == EOS
        row_base = torch.arange(b, device=device).unsqueeze(1) * k
        # finalise </s> candidates ranked among the first k
        final = is_eos[:, :k] & torch.isfinite(cand[:, :k])
        count.index_add_(0, sent, final.sum(1))
        done = (count[sent] >= k) | forced
        any_final, any_done = torch.stack([final.any(), done.any()]).tolist()  # the step's one read
        if any_final:
            i, j = final.nonzero(as_tuple=True)
            ended = sent[i]
            final_rows = (row_base[i, 0] + origin[i, j]).tolist()
            divisor = t ** length_penalty if length_penalty else 1.0
            for s, row, words, logprob in zip(ended.tolist(), final_rows, tokens[final_rows].tolist(),
                                              cand[i, j].tolist()):
                finished[s].append(Hypothesis(words, logprob, logprob / divisor, collect_attention(history, row, t)))
        # keep the k best candidates that do not end the sentence (-inf where fewer than k are left)
        scores, pick = cand.masked_fill(is_eos, -torch.inf).topk(k, dim=1)
        rows = row_base + origin.gather(1, pick)
        prev = word.gather(1, pick)
        if any_done:  # done sentences leave the batch
            keep = (~done).nonzero().flatten()
            sent, scores, rows, prev = sent[keep], scores[keep], rows[keep], prev[keep]
            nearest_limit = int(limit[sent].min()) if sent.numel() else 0
        rows, prev = rows.view(-1), prev.view(-1)
        tokens = torch.cat([tokens[rows], prev.unsqueeze(1)], 1)
        state = state.reorder(rows, within_sentences=not any_done)
        history = {name: h[rows] for name, h in history.items()}
    return [sorted(f, key=lambda h: -h.score)[:n_best] for f in finished]
