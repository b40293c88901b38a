"""The WID paper's Experiments 2 and 3 (Li et al., SIGMOD 2005): latency
against accuracy of a hopping window aggregate over disordered input, with
completeness from exact external punctuations or from a fixed slack, each
in the late modes ``consistent`` and ``generous`` (docs/semantics.md#completeness).

Reconstructed, not copied: the paper's text was not available, so the
disorders and the punctuating source are the usual definitions, stated
precisely in `benchmarks.disorder.streams`; the operator set-up is in
`benchmarks.disorder.operator_run`, the measures in
`benchmarks.disorder.measure`. Two records:

- ``disorder_bounded``: every row delayed by up to D ms (uniform);
- ``disorder_block``: blocks of B rows, each shuffled internally.

Each record's ``points`` hold one measurement per handling: slack sweeps
``slacks_ms`` (the watermark is ``max seen - slack``), punctuations come
every ``every_ms`` (exact, as early as possible). Each point has the
latency (ms of arrival time past the window end when it emitted; also in rows)
and the error (mean count and sum error %, share of incorrect windows)
against the exact answer of every window ending by the horizon.

No Spark: wid's operator shards run in this process (one shard: sharding
does not change results), so the figures are about semantics, not speed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.disorder.exact import exact_windows
from benchmarks.disorder.measure import arrivals, judge
from benchmarks.disorder.operator_run import Handling, run_operator
from benchmarks.disorder.streams import Stream, block_sorted, bounded, in_order, punctuations

TITLE = "WID paper Exp. 2-3: latency against accuracy under disorder, punctuation vs slack"
MODES = ("consistent", "generous")


@dataclass(frozen=True)
class Sizes:
    """One run's shape: the stream (`rows`, `keys`, `rate_per_s`), its
    micro-batches (`batch_rows`), the window (`duration_ms` every `hop_ms`),
    the disorders (bounded `disorder_ms`, block-sorted `block_rows`) and the
    handlings swept (`slacks_ms`, punctuation `every_ms`)."""

    rows: int
    keys: int
    rate_per_s: int
    batch_rows: int
    duration_ms: int = 10_000
    hop_ms: int = 1_000
    disorder_ms: int = 2_000
    block_rows: int = 2_000
    slacks_ms: tuple[int, ...] = (0, 250, 500, 1_000, 1_500, 2_000, 3_000)
    every_ms: tuple[int, ...] = (1_000, 2_500)


QUICK = Sizes(rows=50_000, keys=20, rate_per_s=1_000, batch_rows=250)
FULL = Sizes(rows=120_000, keys=50, rate_per_s=1_000, batch_rows=250)


def handlings(sizes: Sizes) -> list[Handling]:
    """Every slack and punctuation handling, in both late modes."""
    slack = [Handling("slack", m, slack_ms=s) for s in sizes.slacks_ms for m in MODES]
    return slack + [Handling("punctuation", m, every_ms=p) for p in sizes.every_ms for m in MODES]


def experiment(name: str, disorder: str, arrival: Stream, sizes: Sizes) -> dict[str, Any]:
    """The record of one disorder: every handling's point."""
    exact = exact_windows(arrival, sizes.duration_ms, sizes.hop_ms)
    horizon_ms = int(arrival.ts_ms.max()) - max(sizes.slacks_ms)
    where = arrivals(arrival, sizes.batch_rows, sizes.hop_ms)
    points = []
    for h in handlings(sizes):
        started = time.perf_counter()
        punct = punctuations(arrival, h.every_ms) if h.completeness == "punctuation" else None
        result = run_operator(arrival, punct, h, sizes.duration_ms, sizes.hop_ms, sizes.batch_rows)
        points.append({**asdict(h), "label": h.label, **judge(exact, result, where, horizon_ms),
                       "run_s": time.perf_counter() - started})
    return {"scenario": name, "title": f"{TITLE} ({disorder})", "rows": len(arrival),
            "params": {**asdict(sizes), "disorder": disorder, "horizon_ms": horizon_ms}, "points": points}


def run(ctx: Any) -> list[dict[str, Any]]:
    """Both experiments at `ctx.quick` sizes, printed; returns the records."""
    sizes = QUICK if ctx.quick else FULL
    stream = in_order(sizes.rows, sizes.keys, sizes.rate_per_s, seed=1)
    records = [
        experiment("disorder_bounded", f"bounded, D = {sizes.disorder_ms} ms",
                   bounded(stream, sizes.disorder_ms, seed=2), sizes),
        experiment("disorder_block", f"block-sorted, B = {sizes.block_rows} rows",
                   block_sorted(stream, sizes.block_rows, seed=3), sizes),
    ]
    for record in records:
        print_points(record)
    return records


def print_points(record: dict[str, Any]) -> None:
    """The record's points as a rich table."""
    from rich.console import Console
    from rich.table import Table

    from benchmarks.suite import fmt

    t = Table(title=f"{record['scenario']}: {record['title']}, {record['rows']:,} rows")
    for col in ("handling", "latency ms", "closing lat. ms", "latency rows", "count err %", "sum err %",
                "incorrect %", "late rows", "emitted/windows", "run s"):
        t.add_column(col)
    for p in record["points"]:
        t.add_row(p["label"], fmt(p["latency_ms"], ",.0f"), fmt(p["closing_latency_ms"], ",.0f"),
                  fmt(p["latency_rows"], ",.0f"), fmt(p["count_err_pct"], ".3f"), fmt(p["sum_err_pct"], ".3f"),
                  fmt(p["incorrect_pct"], ".1f"), f"{p['late_rows']:,}", f"{p['emitted']:,}/{p['windows']:,}",
                  fmt(p["run_s"], ".1f"))
    Console(width=200).print(t)


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """Per record, ``out/<scenario>.png``: mean count error and share of
    incorrect windows against latency, one curve per handling and mode."""
    from benchmarks.plots import pyplot, save

    plt = pyplot()

    paths = []
    for record in records:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, metric, label in ((axes[0], "count_err_pct", "mean count error (%)"),
                                  (axes[1], "incorrect_pct", "incorrect windows (%)")):
            curves(ax, record["points"], metric)
            ax.set_xlabel("latency: arrival time past the window end (ms)")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{record['scenario']}: {record['params']['disorder']}, {record['rows']:,} rows", fontsize=10)
        fig.tight_layout()
        paths.append(save(fig, out / f"{record['scenario']}.png"))
    return paths


def curves(ax: Any, points: list[dict[str, Any]], metric: str) -> None:
    """One line per (completeness, late mode), its points labelled by the
    slack (ms) or punctuation period (``P`` ms)."""
    style = {("slack", "consistent"): "o-", ("slack", "generous"): "s--",
             ("punctuation", "consistent"): "*-", ("punctuation", "generous"): "x:"}
    for (completeness, mode), fmt_ in style.items():
        mine = [p for p in points if p["completeness"] == completeness and p["late_mode"] == mode]
        knob = "slack_ms" if completeness == "slack" else "every_ms"
        mine.sort(key=lambda p: p["latency_ms"])
        ax.plot([p["latency_ms"] for p in mine], [p[metric] for p in mine], fmt_, label=f"{completeness}, {mode}",
                markersize=9 if completeness == "punctuation" else 5)
        for p in mine:
            if mode == "consistent":
                text = f"P {p[knob]}" if knob == "every_ms" else f"{p[knob]}"
                ax.annotate(text, (p["latency_ms"], p[metric]), fontsize=7, textcoords="offset points",
                            xytext=(3, -11) if knob == "every_ms" else (3, 3))
