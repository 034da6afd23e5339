"""Time of rnnsearch decode steps and of a training step in-process, where whole-command timings are too noisy.

    python bench/decode_step.py [--tiny]

40 decode steps of batch 160 (32 sentences × 5 beams, 30 source tokens; the LibreOffice benchmark's
sizes: embeddings 256, encoder 256, decoder 512, 8k vocabulary), min over 6 repeats; one training
forward and backward on 64 sentences, median of 3. ``--tiny`` uses sizes 8 and 400 steps: the step
is then Python overhead. Compare two trees by running it alternately with PYTHONPATH=TREE.
"""
import statistics
import sys
import time

import torch

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model

torch.set_num_threads(2)
tiny = "--tiny" in sys.argv[1:]
vocab, size, steps = (50, 8, 400) if tiny else (8000, None, 40)
config = {"arch": "rnnsearch", "dropout": 0.2, **({"emb_size": 8, "enc_size": 8, "dec_size": 8} if tiny else
                                                 {"emb_size": 256, "enc_size": 256, "dec_size": 512})}
g = torch.Generator().manual_seed(0)
src = [torch.randint(4, vocab, (30,), generator=g).tolist() for _ in range(160)]
tgt = [torch.randint(4, vocab, (28,), generator=g).tolist() for _ in range(64)]
torch.manual_seed(0)
model = build_model(config, CorpusMeta.text(vocab, vocab)).eval()
with torch.no_grad():
    start, prev, times = model.encode(make_batch(src)), torch.full((160,), 5), []
    for _ in range(7):
        state, t0 = start, time.perf_counter()
        for _ in range(steps):
            _, state, _ = model.decode_step(prev, state)
            state = state.reorder(torch.arange(160), within_sentences=True)
        times.append((time.perf_counter() - t0) / steps)
model.train()
batch, train = make_batch(src[:64], tgt), []
for _ in range(4):
    t0 = time.perf_counter()
    model(batch).logits.float().logsumexp(-1).sum().backward()
    model.zero_grad(set_to_none=True)
    train.append(time.perf_counter() - t0)
print(f"decode step {min(times[1:]) * 1e3:.3f} ms (min of 6)"
      + ("" if tiny else f", training forward+backward {statistics.median(train[1:]) * 1e3:.0f} ms (median of 3)"))
