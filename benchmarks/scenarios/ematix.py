"""The ematix-flow bench: a 1-minute tumbling window over 100 keys.

The ematix-flow windowing design reports, for its Rust engine on Apple
M-series, 80 µs per call to ingest a 1,000-row batch and 83 µs to ingest
and emit (`REPORTED_US`). wid's counterpart of "a call" is one micro-batch
through one shard of the WID streaming operator (`per_call`, no Spark: the
shard's own work), so that is what is timed at 1,000 rows, as µs per call
and ns per row. It runs again at 100,000-row calls, where the fixed cost
of a call (about a hundred vectorised Arrow and NumPy calls) is spread
over many rows.

At 1M and 10M rows per-call overhead no longer dominates: the same query
runs there on every engine (wid batch on Spark, Spark's ``window()``,
DuckDB, PyFlink, Bytewax, Pathway), read from Parquet (or CSV for Flink).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import data
from benchmarks.local_operator import ShardedOperator, packed_rows
from benchmarks.peers.all_peers import window_engines
from benchmarks.peers.spark_peers import window_of
from benchmarks.query import KEYS, WindowQuery
from benchmarks.suite import Scenario, run_scenario

TITLE = "ematix-flow bench: 1-minute tumbling, 100 keys; per call at 1,000 rows, then 1M and 10M rows"
REPORTED_US = {"ingest": 80.0, "ingest_emit": 83.0}
QUERY = WindowQuery("tumbling", 60_000)


def per_call(calls: int, rows: int = 1000, keys: int = 100) -> dict[str, Any]:
    """µs per call of one operator shard on `rows`-row micro-batches (built
    before the clock starts): ``ingest`` (lateness of a day: nothing
    closes) and ``ingest_emit`` (each batch is the next minute, lateness 0:
    each call closes the previous minute's `keys` windows)."""
    rng, warmup = np.random.default_rng(3), max(5, calls // 10)
    found: dict[str, float] = {}
    for mode, lateness_ms in (("ingest", 86_400_000), ("ingest_emit", 0)):
        op = ShardedOperator(replace(window_of(QUERY), lateness_ms=lateness_ms, max_groups_per_window=keys), 1)
        tables = []
        for i in range(warmup + calls):
            ts = data.EPOCH_2026_MS + i * 60_000 + np.sort(rng.integers(0, 60_000, rows))
            tables.append(packed_rows(rng.integers(0, keys, rows, dtype=np.int32), ts, rng.random(rows), "a", 1,
                                      i))
        for t in tables[:warmup]:
            op.step(t)
        started = time.perf_counter()
        for t in tables[warmup:]:
            op.step(t)
        found[mode] = (time.perf_counter() - started) / calls * 1e6
    return {"scenario": f"ematix_per_call_{rows}",
            "title": f"one operator shard, {rows:,}-row calls, {keys} keys",
            "rows_per_call": rows, "calls": calls, "us_per_call": found,
            "ns_per_row": {k: v * 1000 / rows for k, v in found.items()}, "reported_us_per_call": REPORTED_US,
            "reported_on": "ematix-flow design, Rust engine, Apple M-series (not this machine)"}


def print_per_call(record: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{record['scenario']}: {record['title']}")
    for col in ("call", "wid µs/call", "wid ns/row", "ematix-flow µs/call (reported, Apple M)"):
        t.add_column(col)
    for mode, us in record["us_per_call"].items():
        t.add_row(mode, f"{us:,.0f}", f"{record['ns_per_row'][mode]:,.0f}", f"{REPORTED_US[mode]:.0f}")
    Console(width=200).print(t)


def run(ctx: Any) -> list[dict[str, Any]]:
    records = [per_call(200 if ctx.quick else 1000), per_call(10 if ctx.quick else 50, rows=100_000)]
    for r in records:
        print_per_call(r)
    for rows in (100_000,) if ctx.quick else (1_000_000, 10_000_000):
        where = data.events(rows, 100)
        s = Scenario(f"ematix_{rows}", f"{QUERY.label}, 100 keys, {rows:,} rows", rows, KEYS,
                     window_engines(ctx.spark, QUERY, where), {"keys": 100})
        records.append(run_scenario(s, ctx.repeats))
    return records


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars([r for r in records if "engines" in r], out / "ematix.png",
                            "ematix-flow bench: tumbling 1 min, 100 keys")]
