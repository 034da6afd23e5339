"""What `train --diagnostics` logged in runs' train.jsonl: each logged update's attention mass, context and state
norms per encoder and the gradient norms of encoders and per-encoder projections, with validation BLEU, then each
figure's range over the run (the tables of bench/README.md's multi-source diagnostics).

Usage: diagnostics.py RUN/train.jsonl ...
"""
import json
import sys

SHOWN = ("mass.", "context.", "states.", "grad.encoder.", "grad.energy.", "grad.value.", "grad.kv.", "grad.attention.")


def logged(path: str) -> list[tuple[int, dict]]:
    """(step, the shown diagnostics) of each logged update of a run."""
    out = []
    for record in map(json.loads, open(path, encoding="utf-8")):
        if record["type"] == "train" and "diagnostics" in record:
            out.append((record["step"], {k: v for k, v in record["diagnostics"].items() if k.startswith(SHOWN)}))
    return out


def main(*paths: str) -> None:
    for path in paths:
        print(f"== {path}")
        valid = {r["step"]: r["bleu"] for r in map(json.loads, open(path, encoding="utf-8")) if r["type"] == "valid"}
        rows = logged(path)
        for step, d in rows:
            print(step, " ".join(f"{k} {v:.3g}" for k, v in d.items()),
                  f"| valid BLEU {valid[step]}" if step in valid else "")
        for key in rows[0][1] if rows else ():
            values = [d[key] for _, d in rows if key in d]
            print(f"range {key}: {min(values):.3g}-{max(values):.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:])
