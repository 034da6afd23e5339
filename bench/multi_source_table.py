"""The lo-enfrde multi-source benchmark's results (bench/multi_source.sh enfr-compare).

Usage: multi_source_table.py OUTPUTS REFERENCE RUNS FIGURE
OUTPUTS holds NAME.sSEED.de test outputs; RUNS the runs NAME.sSEED/ (train.jsonl). Prints, for the RNN systems
against the better single source (en or fr, by mean test BLEU) and for the Transformer systems against t-en,
`nmtkit compare`'s tables (BLEU and chrF++; JSON and CSV beside the runs as enfr-rnn.* and enfr-transformer.*);
draws the validation BLEU of every run against updates into FIGURE (and FIGURE with _transformer for t-*); and
prints each run's diagnostics at its last logged update (the attention mass, context and state norm of each
encoder; the gradient norms of the encoders and of their projections).
"""
import re
import subprocess
import sys
from pathlib import Path

from diagnostics import logged
from learning_curves import main as draw_curves

from nmtkit.metrics.text import corpus_score


def systems(outputs: Path) -> dict[str, list[Path]]:
    """NAME -> its outputs, by seed."""
    found: dict[str, list[Path]] = {}
    for path in sorted(outputs.glob("*.s*.de")):
        name = re.sub(r"\.s\d+\.de$", "", path.name)
        found.setdefault(name, []).append(path)
    return found


def mean_bleu(files: list[Path], refs: list[str]) -> float:
    scores = [corpus_score("bleu", f.read_text(encoding="utf-8").splitlines(), [refs]).score for f in files]
    return sum(scores) / len(scores)


def compare(title: str, baseline: str, names: list[str], found: dict, reference: str, runs: Path) -> None:
    order = [baseline] + [n for n in names if n != baseline and n in found]
    if len(order) < 2:
        return
    print(f"== {title}: against {baseline}", flush=True)
    args = ["nmtkit", "compare", "-r", reference, "--metric", "bleu,chrf++", "--json", str(runs / f"{title}.json"),
            "--csv", str(runs / f"{title}.csv")]
    for name in order:
        args += ["--sys", f"{name}={','.join(str(p) for p in found[name])}"]
    subprocess.run(args, check=True)


RNN_ORDER = ["en", "fr", "concat", "flat", "hierarchical", "flat-sentinel", "hierarchical-sentinel"]
TRANSFORMER_ORDER = ["t-en", "t-serial", "t-parallel", "t-flat", "t-hierarchical"]


def ordered(found: dict, first: list[str], transformer: bool) -> list[str]:
    """The systems of one family (t-*: the Transformer's) that have outputs: those of ``first`` in its order, then
    the variants (encoder dropout, balanced, normalised, ...) by name."""
    family = [n for n in found if n.startswith("t-") == transformer]
    return [n for n in first if n in family] + sorted(n for n in family if n not in first)


def main(outputs: str, reference: str, runs: str, figure: str) -> None:
    found, run_dir = systems(Path(outputs)), Path(runs)
    refs = Path(reference).read_text(encoding="utf-8").splitlines()
    singles = [n for n in ("en", "fr") if n in found]
    if singles:
        best = max(singles, key=lambda n: mean_bleu(found[n], refs))
        compare("enfr-rnn", best, ordered(found, RNN_ORDER, transformer=False), found, reference, run_dir)
    if "t-en" in found:
        compare("enfr-transformer", "t-en", ordered(found, TRANSFORMER_ORDER, transformer=True), found, reference,
                run_dir)
    for transformer, out in ((False, figure), (True, figure.replace(".png", "_transformer.png"))):
        logs = [f"{name}={run_dir / p.name.removesuffix('.de')}/train.jsonl" for name, paths in found.items()
                for p in paths if name.startswith("t-") == transformer
                and (run_dir / p.name.removesuffix(".de") / "train.jsonl").exists()]
        if logs:
            draw_curves(out, "0", "1", *logs)
    print("== diagnostics at the last logged update of each run")
    for paths in found.values():
        for p in paths:
            log = run_dir / p.name.removesuffix(".de") / "train.jsonl"
            rows = logged(str(log)) if log.exists() else []
            if rows:
                print(f"{p.name.removesuffix('.de')}: " + ", ".join(f"{k} {v:.3g}" for k, v in rows[-1][1].items()))


if __name__ == "__main__":
    main(*sys.argv[1:])
