"""The ematix-flow bench: a 1-minute tumbling window over 100 keys.

The ematix-flow windowing design reports, for its Rust engine on Apple
M-series, 80 µs per call to ingest a 1,000-row batch and 83 µs to ingest
and emit (`REPORTED_US`). wid's counterpart of "a call" is one micro-batch
through one shard of the WID streaming operator (`per_call`, no Spark: the
shard's own work), so that is what is timed at 1,000 rows, as µs per call
and ns per row.

At 1M and 10M rows per-call overhead no longer dominates: the same query
runs there on every engine (wid batch on Spark, Spark's ``window()``,
DuckDB, PyFlink, Bytewax, Pathway), read from Parquet (or CSV for Flink).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.peers.all_peers import window_engines
from benchmarks.query import KEYS, WindowQuery
from benchmarks.suite import Scenario, run_scenario

TITLE = "ematix-flow bench: 1-minute tumbling, 100 keys; per call at 1,000 rows, then 1M and 10M rows"
REPORTED_US = {"ingest": 80.0, "ingest_emit": 83.0}
QUERY = WindowQuery("tumbling", 60_000)


def run(ctx: Any) -> list[dict[str, Any]]:
    records = []
    for rows in (200_000,) if ctx.quick else (1_000_000, 10_000_000):
        where = data.events(rows, 100)
        s = Scenario(f"ematix_{rows}", f"{QUERY.label}, 100 keys, {rows:,} rows", rows, KEYS,
                     window_engines(ctx.spark, QUERY, where), {"keys": 100})
        records.append(run_scenario(s, ctx.repeats))
    return records


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars(records, out / "ematix.png", "ematix-flow bench: tumbling 1 min, 100 keys")]
