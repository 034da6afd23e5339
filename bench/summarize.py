"""Print benchmark figures from nmtkit's own logs (used by the bench scripts)."""
import json
import re
import statistics
import sys
from pathlib import Path

import sacrebleu


def speed(log: str, mem: str) -> None:
    records = [json.loads(l) for l in Path(log).read_text().splitlines()]
    train = [r for r in records if r["type"] == "train"]
    steady = [r["tok_per_s"] for r in train if r["step"] > 50] or [r["tok_per_s"] for r in train]
    last = train[-1]
    valid = [r for r in records if r["type"] == "valid"]
    print(f"training: {len(train)} windows, tok/s min {min(steady):,.0f} / median {statistics.median(steady):,.0f}; "
          f"{last['step']} steps, epoch {last['epoch']}, peak memory {int(Path(mem).read_text().split()[-1]) / 1e6:.2f} GB")
    if valid:
        v = valid[-1]
        print(f"last validation: step {v['step']}, dev ppl {v['ppl']}, dev BLEU {v['bleu']} (first sentences only)")


def decode(hyp: str, ref: str, mem: str, start: str, end: str, name: str, log: str) -> None:
    """Speed of the whole command and of decoding alone (the ``translated N lines in X s`` line of its ``log``),
    peak memory, test BLEU and chrF."""
    hyps = Path(hyp).read_text(encoding="utf-8").splitlines()
    refs = Path(ref).read_text(encoding="utf-8").splitlines()
    seconds = float(end) - float(start)
    decoding = re.search(r"translated (\d+) lines in ([\d.]+) s \(([\d.]+) lines/s", Path(log).read_text())
    bleu = sacrebleu.corpus_bleu(hyps, [refs]).score
    chrf = sacrebleu.corpus_chrf(hyps, [refs]).score
    print(f"decode {name}: {len(hyps)} sentences in {seconds:.1f} s (whole command) = {len(hyps) / seconds:.1f} sent/s, "
          f"decoding alone {decoding[3]} sent/s; peak memory {int(Path(mem).read_text().split()[-1]) / 1e6:.2f} GB; "
          f"test BLEU {bleu:.2f} chrF {chrf:.2f}")

if __name__ == "__main__":
    {"speed": speed, "decode": decode}[sys.argv[1]](*sys.argv[2:])
