"""How well ``translate --alignments`` (links from attention) agrees with an IBM Model 2 aligner's (nmtkit's
fast_align model), where no gold alignment is at hand: the test set is translated with alignments, the aligner is
trained on the training pairs plus the (test source, translation) pairs, and its most probable links of those pairs
are the reference. Words are the raw text's, split at spaces, as both sides' alignments count them.

Prints precision, recall and AER (Och and Ney 2003, the aligner's links taken as sure) of the attention's links,
and of a diagonal baseline (each output word linked to the source word at its relative position) for scale.

    python bench/alignment_agreement.py -m MODEL --src test.en --train-src train.en --train-tgt train.de \
        [--hyp HYP --links LINKS] [--threads 2] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from nmtkit.tools.aligner import index_corpus, train_ibm2, viterbi_links

Links = set[tuple[int, int]]


def read(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def agreement(found: list[Links], reference: list[Links]) -> dict:
    """Precision, recall and AER of ``found`` against ``reference`` (as sure links), over all sentences."""
    hits = sum(len(a & r) for a, r in zip(found, reference))
    total_a, total_r = sum(map(len, found)), sum(map(len, reference))
    return {"precision": round(hits / max(total_a, 1), 4), "recall": round(hits / max(total_r, 1), 4),
            "aer": round(1 - 2 * hits / max(total_a + total_r, 1), 4), "links": total_a}


def diagonal(src_len: int, tgt_len: int) -> Links:
    """Each target word j linked to source word round(j · n / m)."""
    return {(min(src_len - 1, round(j * src_len / tgt_len)), j) for j in range(tgt_len)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", help="checkpoint to translate --src with (unless --hyp and --links)")
    parser.add_argument("--src", required=True)
    parser.add_argument("--hyp", help="the translation of --src (with --links: no model run)")
    parser.add_argument("--links", help="its alignments, as translate --alignments wrote them")
    parser.add_argument("--train-src", required=True)
    parser.add_argument("--train-tgt", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        hyp_path, links_path = args.hyp, args.links
        if not (hyp_path and links_path):
            hyp_path, links_path = f"{tmp}/hyp", f"{tmp}/links"
            subprocess.run(["nmtkit", "translate", "-m", args.model, "-i", args.src, "-o", hyp_path,
                            "--alignments", links_path, "--threads", str(args.threads)], check=True)
        src, hyp, links = read(args.src), read(hyp_path), read(links_path)
    test = [(s.split(), h.split()) for s, h in zip(src, hyp)]
    usable = [k for k, (s, h) in enumerate(test) if s and h]
    train = [(s.split(), t.split()) for s, t in zip(read(args.train_src), read(args.train_tgt))]
    corpus = index_corpus([test[k] for k in usable] + train)  # the test pairs first: their links come first
    table, t = train_ibm2(corpus, iterations=5)
    ibm = [set(links) for links in viterbi_links(corpus, table, t)[:len(usable)]]
    attention = [{tuple(map(int, pair.split("-"))) for pair in links[k].split()} for k in usable]
    baseline = [diagonal(len(test[k][0]), len(test[k][1])) for k in usable]
    figures = {"sentences": len(usable), "attention": agreement(attention, ibm),  # type: ignore[arg-type]
               "diagonal": agreement(baseline, ibm)}
    print(f"{len(usable)} sentence pairs (test source, translation); reference: IBM-2 Viterbi links "
          f"({sum(map(len, ibm))})")
    for name in ("attention", "diagonal"):
        f = figures[name]
        print(f"{name:>9}: precision {f['precision']:.3f}  recall {f['recall']:.3f}  AER {f['aer']:.3f}  "
              f"({f['links']} links)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
