"""Micro-benchmark (not a test): the cost of each architecture's training step and beam search.

    python bench/step_time.py rnnsearch target-attn bitatt-rnn     # 2 threads
    python bench/step_time.py --paper rnnsearch target-attn        # the papers' sizes

One synthetic batch of 64 sentence pairs, 15-34 tokens a side, vocabularies of 8,000, the
rnnsearch benchmark's sizes (embeddings 256, encoder 256 per direction, decoder 512), or with
--paper those of target-target-attention.txt §3.1 (embeddings 620, GRUs 1000, 30,000 words): forward
and backward of the training loss (joint loss where there is a reverse decoder), median of 5
after one warm-up, and beam search (beam 5) of 32 of the sources.
"""
import statistics
import sys
import time

import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model
from nmtkit.models.loss import cross_entropy
from nmtkit.search.beam import beam_search

torch.set_num_threads(2)
args = sys.argv[1:]
paper = "--paper" in args
archs = [a for a in args if a != "--paper"] or ["rnnsearch", "target-attn", "bitatt-rnn"]
vocab = 30000 if paper else 8000
g = torch.Generator().manual_seed(0)
lengths = lambda: torch.randint(15, 35, (64,), generator=g).tolist()
src = [torch.randint(4, vocab, (n,), generator=g).tolist() for n in lengths()]
tgt = [torch.randint(4, vocab, (n,), generator=g).tolist() for n in lengths()]
batch = make_batch(src, tgt)
sizes = dict(emb_size=620, enc_size=1000, dec_size=1000) if paper else dict(emb_size=256, enc_size=256, dec_size=512)
config = dict(sizes, att_size=0, readout_size=0, dropout=0.2, tie_embeddings=False, param_init=0.1)
base = None
for arch in archs:
    torch.manual_seed(0)
    model = build_model({**config, "arch": arch}, CorpusMeta.text(vocab, vocab)).train()
    times = []
    for _ in range(6):
        start = time.perf_counter()
        out = model(batch)
        loss = cross_entropy(out.logits, batch.tgt_out)
        for aux, gold in out.auxiliary:
            loss = loss + cross_entropy(aux, gold)
        loss.backward()
        model.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - start)
    train = statistics.median(times[1:])
    model.eval()
    with torch.no_grad():
        start = time.perf_counter()
        beam_search(model, make_batch(src[:32]), beam_size=5)
        decode = time.perf_counter() - start
    base = base or (train, decode)
    params = sum(p.numel() for p in model.parameters())
    print(f"{arch}: {params:,} parameters; training step {train * 1e3:.0f} ms ({batch.tgt_tokens / train:,.0f} tok/s, "
          f"{train / base[0]:.2f}x); beam 5, 32 sentences {decode:.2f} s ({decode / base[1]:.2f}x)")
