"""The WID paper's Experiment 1: window evaluation time as ``range / slide``
grows (Li et al., SIGMOD 2005, performance study: WID against buffering).

Hopping windows of `range = r * slide` (slide 60 s; r = 1 is the tumbling
window) over the same events (100 keys, 100 rows per second of event time),
count, sum and max of ``v`` per key and window, for r in `RATIOS`:

- wid (panes merged into windows: its cost should not grow with r;
  target: within 1.5x of its own tumbling time at every r);
- Spark's ``window()`` (copies each row r times);
- buffering (the paper's baseline: each extent's rows materialised, then
  aggregated);
- PyFlink ``HOP`` (if set up);
- the scan floor (read plus a trivial aggregate), drawn as the floor line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.peers.all_peers import guarded, window_engines
from benchmarks.peers.spark_peers import buffering_engine, scan_floor_engine
from benchmarks.query import KEYS, WindowQuery
from benchmarks.suite import Scenario, run_scenario

TITLE = "paper Experiment 1: hopping windows as range / slide grows, WID against buffering"
RATIOS = (1, 2, 5, 10, 30, 60, 120)
SLIDE_MS = 60_000


def query(ratio: int) -> WindowQuery:
    if ratio == 1:
        return WindowQuery("tumbling", SLIDE_MS)
    return WindowQuery("hopping", ratio * SLIDE_MS, SLIDE_MS)


def run(ctx: Any) -> list[dict[str, Any]]:
    """All of `RATIOS` on 1M rows; `--quick`: ratios 1, 10 and 60 on 100k rows
    (at 120 the buffering baseline alone took 37 of the suite's 10 minutes)."""
    rows = 100_000 if ctx.quick else 1_000_000
    where = data.events(rows, 100, rate_per_s=100)
    records = []
    for r in (1, 10, 60) if ctx.quick else RATIOS:
        q = query(r)
        engines = [*window_engines(ctx.spark, q, where, ("wid", "spark window()")),
                   guarded("buffering", lambda q=q: buffering_engine(ctx.spark, q, where)),
                   *window_engines(ctx.spark, q, where, ("flink",)),
                   guarded("scan floor", lambda: scan_floor_engine(ctx.spark, where))]
        s = Scenario(f"experiment1_r{r}", f"{q.label}, range / slide = {r}", rows, KEYS, engines,
                     {"ratio": r, "slide_ms": SLIDE_MS, "keys": 100})
        records.append(run_scenario(s, ctx.repeats))
    wid_1 = median(records[0], "wid")
    for rec in records:
        rec["wid_over_own_tumbling"] = median(rec, "wid") / wid_1 if wid_1 else None
        print(f"{rec['scenario']}: wid / wid tumbling = {rec['wid_over_own_tumbling']:.2f} (target <= 1.5)")
    return records


def median(record: dict[str, Any], engine: str) -> float:
    return next(e["median_s"] or 0.0 for e in record["engines"] if e["engine"] == engine)


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """Execution time against range / slide, one line per engine, the scan
    floor dashed (the paper's execution-time figure)."""
    from benchmarks.plots import pyplot, save

    plt = pyplot()

    ratios = [r["params"]["ratio"] for r in records]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = [e["engine"] for e in records[0]["engines"]]
    for name in names:
        ys = [median(r, name) or None for r in records]
        if not any(ys):
            continue
        style = {"linestyle": "--", "color": "grey"} if name == "scan floor" else {"marker": "o"}
        ax.plot(ratios, ys, label=name, **style)
    ax.set(xscale="log", yscale="log", xlabel="range / slide", ylabel="execution time (s, median)",
           title=f"Experiment 1: {records[0]['rows']:,} rows, 100 keys, slide 60 s")
    ax.set_xticks(ratios, [str(r) for r in ratios])
    ax.legend()
    return [save(fig, out / "experiment1.png")]
