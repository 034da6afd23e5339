"""One greedy decoding step of nmtkit's Transformer against the same weights in CTranslate2, alternating
(run by ``bench/transformer_lo_ende.sh transformer steps``).

Usage: transformer_step.py CHECKPOINT CT2_MODEL_DIR SPM_MODEL TEST_SOURCE [BATCH ...]
For each batch size B: B test sentences of the same middling length, 30 steps from <s> (nmtkit: ``decode_step``
with its caches; CTranslate2: ``translate_batch`` forced to 31 and to 1 steps, the difference / 30), median of 7,
both on 2 threads. Also prints the number of tensor operations in one nmtkit step.
"""
import statistics
import sys
import time

import ctranslate2
import sentencepiece as spm
import torch
from torch.profiler import profile

from nmtkit.data.batching import make_batch
from nmtkit.data.vocab import BOS
from nmtkit.inference import load_model

STEPS, REPEATS = 30, 7


def nmtkit_step(model, batch) -> float:
    """Seconds per step of ``STEPS`` greedy steps from <s>."""
    with torch.inference_mode():
        state, prev = model.encode(batch), torch.full((batch.size,), BOS)
        start = time.perf_counter()
        for _ in range(STEPS):
            lp, state, _ = model.decode_step(prev, state)
            prev = lp.argmax(-1)
        return (time.perf_counter() - start) / STEPS


def ct2_step(translator, pieces) -> float:
    """Seconds per step: CTranslate2 forced to STEPS + 1 steps and to 1, the difference over STEPS."""
    def run(steps: int) -> float:
        start = time.perf_counter()
        translator.translate_batch(pieces, beam_size=1, max_decoding_length=steps, min_decoding_length=steps)
        return time.perf_counter() - start
    return (run(STEPS + 1) - run(1)) / STEPS


def main(checkpoint: str, ct2_dir: str, sp_model: str, source: str, *batches: str) -> None:
    torch.set_num_threads(2)
    loaded = load_model(checkpoint)
    model, vocab = loaded.model, loaded.vocabs["src"]
    sp = spm.SentencePieceProcessor(model_file=sp_model)
    translator = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=2)
    lines = sorted(open(source, encoding="utf-8").read().splitlines(), key=lambda line: len(sp.encode(line)))
    for size in map(int, batches or ("1", "32")):
        chosen = lines[len(lines) // 2:len(lines) // 2 + size]
        batch = make_batch([vocab.encode(line) for line in chosen])
        pieces = [sp.encode(line, out_type=str) for line in chosen]
        nmtkit_step(model, batch), ct2_step(translator, pieces)  # warm-up
        ours, theirs = [], []
        for _ in range(REPEATS):
            ours.append(nmtkit_step(model, batch))
            theirs.append(ct2_step(translator, pieces))
        print(f"batch {size} (source length {batch['src'].data.size(1)} tokens): one greedy step, median of {REPEATS}: "
              f"nmtkit {statistics.median(ours) * 1e3:.2f} ms, CTranslate2 {statistics.median(theirs) * 1e3:.2f} ms")
    with torch.inference_mode():
        state, prev = model.encode(batch), torch.full((batch.size,), BOS)
        for _ in range(3):
            lp, state, _ = model.decode_step(prev, state)
            prev = lp.argmax(-1)
        with profile() as prof:
            model.decode_step(prev, state)
    print(f"tensor operations in one nmtkit step: {sum(e.cpu_parent is None for e in prof.events())}")


if __name__ == "__main__":
    main(*sys.argv[1:])
