"""Which lines an automatic post-editing output changes, and whether each change brings the MT closer to its
post-edit (sentence TER) or takes it further: an APE system with a high edit cost changes few lines, and this says
whether the edits it is surest of are right.

    python bench/ape_edits.py --mt dev.mt --pe dev.pe OUTPUT...
"""
from __future__ import annotations

import argparse
from pathlib import Path

from sacrebleu.metrics import TER


def lines(path: str) -> list[str]:
    """The lines of a UTF-8 file, without their ends."""
    return Path(path).read_text(encoding="utf-8").splitlines()


def edits(mt: list[str], pe: list[str], output: list[str]) -> dict[str, int]:
    """Counts over the lines where ``output`` differs from ``mt``: ``closer`` (lower sentence TER against ``pe``
    than the MT's), ``further`` (higher), ``as_far`` (equal); ``changed`` is their sum."""
    if not len(mt) == len(pe) == len(output):
        raise SystemExit(f"error: {len(mt)} MT lines, {len(pe)} post-edits and {len(output)} output lines")
    ter = TER()
    counts = {"changed": 0, "closer": 0, "further": 0, "as_far": 0}
    for before, after, reference in zip(mt, output, pe):
        if after == before:
            continue
        old, new = ter.sentence_score(before, [reference]).score, ter.sentence_score(after, [reference]).score
        counts["changed"] += 1
        counts["closer" if new < old else "further" if new > old else "as_far"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mt", required=True, help="the MT output that was post-edited")
    parser.add_argument("--pe", required=True, help="the human post-edits")
    parser.add_argument("outputs", nargs="+", help="APE outputs, one line per MT line")
    args = parser.parse_args()
    mt, pe = lines(args.mt), lines(args.pe)
    for path in args.outputs:
        c = edits(mt, pe, lines(path))
        print(f"{path}: {c['changed']} of {len(mt)} lines changed: {c['closer']} closer to the post-edit, "
              f"{c['further']} further, {c['as_far']} as far")


if __name__ == "__main__":
    main()
