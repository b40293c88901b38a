"""Every engine of the rolling benchmark scenario (`benchmarks.scenarios.rolling`:
wid, Spark's window function, DuckDB, pandas) computes the rolling window
``(t - d, t]`` with ties included, checked against a brute-force loop over
the rows. The data has rows tied on (key, time), and rows exactly d and d - 1
ms before another row of their key (out of and in its window)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.peers.duckdb_peer import duckdb_run
from benchmarks.scenarios.rolling import (
    DURATION_MS,
    KEYS,
    pandas_rolling,
    spark_sql_engine,
    wid_engine,
    window_sql,
)
from benchmarks.suite import disagreement

T0 = 1_767_225_600_000  # 2026-01-01, epoch ms


def _events(where: Path) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 600
    ts = T0 + np.sort(rng.integers(0, 5 * DURATION_MS, n))
    k = rng.integers(0, 3, n).astype(np.int32)
    edges = [(5, T0), (5, T0 + DURATION_MS), (5, T0 + DURATION_MS), (5, T0 + 2 * DURATION_MS - 1),
             (6, T0 + 10), (6, T0 + 10), (6, T0 + 10)]  # exactly d apart, ties, d - 1 apart
    table = pa.table({"k": pa.array([*k, *(e[0] for e in edges)], pa.int32()),
                      "ts_ms": pa.array([*ts, *(e[1] for e in edges)], pa.int64()),
                      "v": pa.array(rng.random(n + len(edges)))})
    pq.write_table(table, where / "events.parquet")
    return table.to_pandas()


def _oracle(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for k, t in zip(df["k"], df["ts_ms"], strict=True):
        mine = df[(df["k"] == k) & (df["ts_ms"] > t - DURATION_MS) & (df["ts_ms"] <= t)]["v"]
        rows.append((k, t, len(mine), mine.sum(), mine.max()))
    return pd.DataFrame(rows, columns=["k", "ts_ms", "n", "s", "hi"])


def test_every_rolling_engine_equals_the_brute_force_window(spark: Any, tmp_path: Path) -> None:
    want = _oracle(_events(tmp_path))
    assert want.duplicated(list(KEYS)).any()  # ties are there to be got wrong
    outputs = {"wid": wid_engine(spark, tmp_path).measure(0).output,
               "spark": spark_sql_engine(spark, tmp_path).measure(0).output,
               "duckdb": duckdb_run(window_sql(f"read_parquet('{tmp_path / 'events.parquet'}')"))(True),
               "pandas": pandas_rolling(tmp_path)}
    for name, got in outputs.items():
        assert got is not None, name
        assert disagreement(want, got, KEYS) is None, (name, disagreement(want, got, KEYS))
