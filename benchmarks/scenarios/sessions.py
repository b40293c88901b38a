"""Session windows on every engine that has them: wid
(docs/architecture.md#batch-plans-in-detail), Spark's ``session_window``,
DuckDB (gaps and islands), PyFlink ``SESSION``, Bytewax and Pathway.

Data: many keys with sparse rows (10,000 keys, 100 rows per second of event
time, so a key sees a row every 100 s on average) and a 60 s gap, so
sessions hold a few rows each, as user sessions do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.peers.all_peers import window_engines
from benchmarks.query import KEYS, WindowQuery
from benchmarks.suite import Scenario, run_scenario

TITLE = "session windows (gap 60 s, 10,000 keys) on every engine that has them"
QUERY = WindowQuery("session", gap_ms=60_000)


def run(ctx: Any) -> list[dict[str, Any]]:
    rows = 50_000 if ctx.quick else 2_000_000
    where = data.events(rows, 10_000, rate_per_s=100)
    s = Scenario(f"sessions_{rows}", f"{QUERY.label}, 10,000 keys, {rows:,} rows", rows, KEYS,
                 window_engines(ctx.spark, QUERY, where, rows=rows), {"keys": 10_000})
    return [run_scenario(s, ctx.repeats)]


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars(records, out / "sessions.png", "session windows, gap 60 s")]
