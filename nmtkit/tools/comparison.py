"""What ``nmtkit compare`` shows of a :class:`~nmtkit.metrics.significance.MetricComparison`: table rows, JSON and
CSV records, and a figure of every system's scores with their confidence intervals."""
from __future__ import annotations

import json
from typing import Optional, Sequence

from nmtkit.data.text import PathLike, atomic_output
from nmtkit.metrics.significance import LOWER_IS_BETTER, Difference, MetricComparison

#: system, files, score (their mean), sd over files, each file's 95% CI, the difference from the first system with
#: its 95% CI, the p-values of paired bootstrap and approximate randomisation, pairs of files significantly different
HEADER = ["system", "files", "score", "sd", "95% CI", "delta", "delta CI", "p boot", "p AR", "pairs"]


def _p(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pairs(pairs: Optional[dict], level: float) -> str:
    """How many pairs of files differ significantly, of how many: '7/9'."""
    if not pairs:
        return "-"
    return f"{sum(d.significant(level) for d in pairs.values())}/{len(pairs)}"


def comparison_rows(result: MetricComparison, level: float = 0.05) -> tuple[list[str], list[list[str]]]:
    """The table of one metric: a row per system (the first, the baseline, without a difference); a difference
    significant by every test that applies at ``level`` is marked '*'."""
    rows = []
    for k, system in enumerate(result.systems):
        runs = system.runs
        ci = f"{runs[0].mean:.2f} ± {runs[0].ci:.2f}" if len(runs) == 1 else "± " + "/".join(f"{r.ci:.2f}" for r in runs)
        row = [system.name, str(len(runs)), f"{system.mean:.2f}", "-" if system.sd is None else f"{system.sd:.2f}", ci]
        diff: Optional[Difference] = result.against_first.get(system.name) if k else None
        if diff is None:
            row += ["-"] * 5
        else:
            row += [f"{diff.delta:+.2f}" + ("*" if diff.significant(level) else ""), f"± {diff.delta_ci:.2f}",
                    _p(diff.p_bootstrap), _p(diff.p_randomisation), _pairs(result.pairs.get(system.name), level)]
        rows.append(row)
    return HEADER, rows


def title(result: MetricComparison) -> str:
    """A table's title: the metric (and which way is better, where lower is) and its extended signature."""
    better = " (lower is better)" if result.metric in LOWER_IS_BETTER else ""
    return f"{result.metric}{better}: {result.signature}"


def _difference(d: Difference, level: float) -> dict:
    return {"delta": d.delta, "delta_ci": d.delta_ci, "p_bootstrap": d.p_bootstrap,
            "p_randomisation": d.p_randomisation, "significant": d.significant(level)}


def as_record(result: MetricComparison, level: float = 0.05) -> dict:
    """Every figure of one metric as plain JSON values."""
    systems = []
    for system in result.systems:
        entry: dict = {"name": system.name, "mean": system.mean, "sd": system.sd,
                       "runs": [{"file": f, "score": r.score, "bootstrap_mean": r.mean, "ci": r.ci}
                                for f, r in zip(system.files, system.runs)]}
        if system.name in result.against_first:
            entry["against_first"] = _difference(result.against_first[system.name], level)
            entry["pairs"] = [{"baseline_file": result.systems[0].files[i], "system_file": system.files[j],
                               **_difference(d, level)} for (i, j), d in result.pairs.get(system.name, {}).items()]
        systems.append(entry)
    return {"metric": result.metric, "higher_is_better": result.metric not in LOWER_IS_BETTER,
            "signature": result.signature, "level": level, "systems": systems}


def write_comparison(results: Sequence[MetricComparison], level: float, json_path: Optional[PathLike],
                     csv_path: Optional[PathLike]) -> None:
    """The JSON record of every metric and the CSV of every table (a column naming the metric); ``-``: stdout."""
    if json_path:
        with atomic_output(json_path) as f:
            f.write(json.dumps([as_record(r, level) for r in results], indent=1) + "\n")
    if csv_path:
        import csv

        with atomic_output(csv_path) as f:
            writer = csv.writer(f)
            writer.writerow(CSV_HEADER)
            writer.writerows(row for result in results for row in csv_rows(result, level))


#: numbers only: the files' mean score and sd; the difference from the first system, its interval and p-values, the
#: verdict at the level, and how many pairs of files differ significantly of how many
CSV_HEADER = ["metric", "system", "files", "score", "sd", "delta", "delta_ci", "p_bootstrap", "p_randomisation",
              "significant", "pairs_significant", "pairs"]


def csv_rows(result: MetricComparison, level: float) -> list[list]:
    """One row per system of :data:`CSV_HEADER` (empty cells where a figure does not apply)."""
    rows = []
    for system in result.systems:
        diff = result.against_first.get(system.name)
        pairs = result.pairs.get(system.name, {})
        rows.append([result.metric, system.name, len(system.runs), system.mean, system.sd] + (
            [diff.delta, diff.delta_ci, diff.p_bootstrap, diff.p_randomisation, diff.significant(level),
             sum(d.significant(level) for d in pairs.values()) if pairs else None, len(pairs) or None]
            if diff else [None] * 7))
    return [["" if v is None else v for v in row] for row in rows]


def plot_comparison(results: Sequence[MetricComparison], path: PathLike) -> None:
    """One panel per metric: each file's score with its 95% interval, by system, and each system's mean."""
    from nmtkit.tools.figures import pyplot, save_figure, setup_fonts

    names = [s.name for s in results[0].systems]
    setup_fonts(names)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(max(4.0, 1.2 * len(names) + 2) * len(results), 4),
                             squeeze=False)
    for ax, result in zip(axes[0], results):
        for x, system in enumerate(result.systems):
            offsets = [x + 0.15 * (k - (len(system.runs) - 1) / 2) for k in range(len(system.runs))]
            ax.errorbar(offsets, [r.score for r in system.runs], yerr=[r.ci for r in system.runs], fmt="o",
                        color=f"C{x}", capsize=3)
            ax.hlines(system.mean, x - 0.3, x + 0.3, color=f"C{x}", linewidth=1)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
        ax.set_title(result.metric + (" (lower is better)" if result.metric in LOWER_IS_BETTER else ""))
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("score ± half the 95% bootstrap interval; line: mean over files")
    fig.tight_layout()
    save_figure(fig, path, "--plot")
