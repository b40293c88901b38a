"""Benchmark data, generated once per shape and kept under
``benchmarks/.data/`` (not in git): Parquet for Spark, DuckDB, pandas and
wid; header-less CSV for Flink's filesystem connector.

`events` is the window scenarios' input (columns in `benchmarks.query`):
`rows` rows over `keys` keys, event times in non-decreasing order
(`rate_per_s` rows per second of event time from 2026-01-01T00:00Z), so a
streaming engine with zero lateness drops nothing and every engine computes
the same windows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

ROOT = Path(__file__).parent / ".data"
EPOCH_2026_MS = 1_767_225_600_000


def events(rows: int, keys: int, rate_per_s: int = 1000, seed: int = 1) -> Path:
    """The directory holding ``events.parquet`` and ``csv/events.csv`` for
    this shape (made on first use)."""
    where = ROOT / f"events_{rows}_{keys}_{rate_per_s}_{seed}"
    if not (where / "events.parquet").exists():
        rng = np.random.default_rng(seed)
        step = np.sort(rng.integers(0, rows * 1000 // rate_per_s, rows, dtype=np.int64))
        table = pa.table({"k": rng.integers(0, keys, rows, dtype=np.int32),
                          "ts_ms": EPOCH_2026_MS + step, "v": rng.random(rows)})
        write(where, "events", table)
    return where


def write(where: Path, name: str, table: pa.Table) -> None:
    """`table` as ``<where>/<name>.parquet`` and header-less
    ``<where>/csv/<name>.csv`` (one file, row order kept)."""
    (where / "csv").mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, where / "csv" / f"{name}.csv", pacsv.WriteOptions(include_header=False))
    pq.write_table(table, where / f"{name}.parquet")
