"""Where a training step's time goes, and how far it is from its compute bound (issue 18).

    python bench/train_profile.py [--steps 30] [--threads 2] [--arch rnnsearch]

The rnnsearch of ../shared/bench/PEERS.md (embeddings 256, BiGRU 256 per direction, GRU decoder 512, 8k
vocabulary, dropout 0.2, Adam 1e-3, clip 1.0) on batches of 64 random sentence pairs of 18-26 tokens (the corpus's
length-bucketed batches hold sentences of about one length): time in the forward pass, the loss, the backward
pass, clipping and the optimiser step, median over ``--steps`` updates after 3 to warm up. The compute bound: every
matrix product of the forward and backward passes (``torch.utils.flop_counter``, which sees each ``mm``, ``addmm``,
``bmm`` and ``baddbmm``, the recurrences' hidden-to-hidden products included), counted once per batch shape outside
the timed steps, against the machine's matrix-multiply rate at the output layer's shape.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from rates import matmul_rate  # bench/rates.py: the script's folder is on the path
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from nmtkit.data.batching import make_batch
from nmtkit.data.streams import CorpusMeta
from nmtkit.models import build_model
from nmtkit.models.loss import cross_entropy

VOCAB = 8000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arch", default="rnnsearch")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = {"arch": args.arch, "emb_size": 256, "enc_size": 256, "dec_size": 512, "dropout": 0.2}
    model = build_model(config, CorpusMeta.text(VOCAB, VOCAB)).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    g = torch.Generator().manual_seed(1)

    def batch():
        n = int(torch.randint(18, 27, (1,), generator=g))
        return make_batch([torch.randint(4, VOCAB, (n,), generator=g).tolist() for _ in range(64)],
                          [torch.randint(4, VOCAB, (n,), generator=g).tolist() for _ in range(64)])

    flops_of_length: dict[int, int] = {}

    def flops(b) -> int:
        """Floating-point operations of the forward and backward passes of batch ``b`` (counted once per length)."""
        length = b.tgt_out.shape[1]
        if length not in flops_of_length:
            counter = FlopCounterMode(display=False)
            with counter:
                (cross_entropy(model(b).logits, b.tgt_out) / b.tgt_tokens).backward()
            optimizer.zero_grad(set_to_none=True)
            flops_of_length[length] = counter.get_total_flops()
        return flops_of_length[length]

    phases: dict[str, list[float]] = {k: [] for k in ("forward", "loss", "backward", "clip", "optimiser step")}
    tokens, per_step_flops = [], []
    for step in range(args.steps + 3):
        b = batch()
        step_flops = flops(b)
        t0 = time.perf_counter()
        logits = model(b).logits
        t1 = time.perf_counter()
        n = b.tgt_tokens
        loss = cross_entropy(logits, b.tgt_out)
        t2 = time.perf_counter()
        (loss / n).backward()
        t3 = time.perf_counter()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        t4 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t5 = time.perf_counter()
        if step >= 3:
            for name, (a, z) in zip(phases, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5)]):
                phases[name].append(z - a)
            tokens.append(n)
            per_step_flops.append(step_flops)
    step_time = sum(statistics.median(v) for v in phases.values())
    tok = statistics.median(tokens)
    print(f"{args.arch}, batch 64, {args.threads} threads: median step {step_time * 1000:.0f} ms, "
          f"{tok / step_time:,.0f} target tokens/s")
    for name, values in phases.items():
        print(f"  {name:16s} {statistics.median(values) * 1000:7.1f} ms  {100 * statistics.median(values) / step_time:5.1f}%")
    step_flops = statistics.median(per_step_flops)
    rate = 2 * matmul_rate(64 * 22, 512 // 2, VOCAB)  # floating-point operations per second
    bound = step_flops / rate
    print(f"matrix products per target token, forward and backward: {step_flops / tok / 1e6:.1f} MFLOP; "
          f"matrix multiply at the output layer's shape: {rate / 1e9:.0f} GFLOP/s; compute bound of the step "
          f"{bound * 1000:.0f} ms, {100 * bound / step_time:.0f}% of its time")


if __name__ == "__main__":
    main()
