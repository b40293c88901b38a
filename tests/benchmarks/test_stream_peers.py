"""Every window engine of the benchmark suite computes `benchmarks.query`'s
windows: each adapter's output on a small events file (wid and Spark's
``window()`` and the buffering baseline on Spark, DuckDB, Bytewax, Pathway)
equals pandas computing the same windows independently; and the suite's
agreement check notices a wrong answer.

The file has 2,000 random rows over 7 keys, in event-time order, then six
rows of key 99 around the session boundary (gap 100 ms)::

    ms after T0 + 25 s   0    60        160  199        299         398
                         x    x          x    x          x           x
                         [one session of six rows                        ]

60 -> 160 and 199 -> 299 are exactly the gap: the row joins the session
(a row exactly at the session's end joins it: Spark's ``session_window``
rule, and wid's), so an adapter that splits there fails; 160 -> 199
(39 ms) and 299 -> 398 (99 ms) stay in one session too, so key 99 has one
session.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from benchmarks import data, suite
from benchmarks.peers.bytewax_peer import bytewax_engine
from benchmarks.peers.duckdb_peer import duckdb_engine
from benchmarks.peers.pathway_peer import pathway_engine
from benchmarks.peers.spark_peers import buffering_engine, spark_window_engine, wid_engine
from benchmarks.query import KEYS, OUTPUT, WindowQuery

QUERIES = [WindowQuery("tumbling", size_ms=1_000), WindowQuery("hopping", size_ms=1_000, slide_ms=250),
           WindowQuery("session", gap_ms=100)]
T0_MS = data.EPOCH_2026_MS
ENGINES = {"bytewax": bytewax_engine, "pathway": pathway_engine, "duckdb": duckdb_engine}
ON_SPARK = {"wid": wid_engine, "spark window()": spark_window_engine, "buffering": buffering_engine}


@pytest.fixture(scope="module")
def events_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(7)
    ts = T0_MS + np.sort(rng.integers(0, 20_000, 2_000))
    edge = T0_MS + 25_000 + np.array([0, 60, 160, 199, 299, 398])
    table = pa.table({"k": np.concatenate([rng.integers(0, 7, 2_000), np.full(6, 99)]).astype(np.int32),
                      "ts_ms": np.concatenate([ts, edge]).astype(np.int64),
                      "v": rng.random(2_006)})
    where = tmp_path_factory.mktemp("events")
    data.write(where, "events", table)
    return where


def expected(q: WindowQuery, events: pd.DataFrame) -> pd.DataFrame:
    """`q` over `events` in pandas: half-open epoch-aligned windows;
    sessions split where a key's next row is more than `gap_ms` after its
    previous one, and end at the last row + `gap_ms`."""
    if q.kind == "session":
        e = events.sort_values(["k", "ts_ms"], kind="stable")
        new = e.groupby("k").ts_ms.diff().fillna(q.gap_ms + 1) > q.gap_ms
        g = e.assign(sid=new.cumsum()).groupby(["k", "sid"])
        out = g.agg(window_start_ms=("ts_ms", "min"), last=("ts_ms", "max"), n=("v", "size"),
                    s=("v", "sum"), hi=("v", "max")).reset_index()
        return out.assign(window_end_ms=out["last"] + q.gap_ms)[list(OUTPUT)]
    slide = q.slide_ms or q.size_ms
    starts = [(events.ts_ms // slide - j) * slide for j in range(-(-q.size_ms // slide))]
    e = pd.concat([events.assign(window_start_ms=s) for s in starts])
    e = e[e.ts_ms < e.window_start_ms + q.size_ms]
    out = e.groupby(["k", "window_start_ms"]).agg(n=("v", "size"), s=("v", "sum"), hi=("v", "max")).reset_index()
    return out.assign(window_end_ms=out.window_start_ms + q.size_ms)[list(OUTPUT)]


@pytest.mark.parametrize("peer", [*ENGINES, *ON_SPARK])
@pytest.mark.parametrize("q", QUERIES, ids=lambda q: q.kind)
def test_peer_matches_pandas(peer: str, q: WindowQuery, events_dir: Path, spark: Any) -> None:
    if peer == "bytewax" and sys.version_info >= (3, 13):  # no Bytewax 0.21 for 3.13 (pyproject's bench extra)
        pytest.importorskip("bytewax")
    engine = ON_SPARK[peer](spark, q, events_dir) if peer in ON_SPARK else ENGINES[peer](q, events_dir)
    run = engine.measure(0)
    assert run.output is not None and sorted(run.output.columns) == sorted(OUTPUT)
    truth = expected(q, pd.read_parquet(events_dir / "events.parquet"))
    assert suite.disagreement(truth, run.output, KEYS) is None


def test_agreement_check_catches_a_wrong_answer(events_dir: Path) -> None:
    truth = expected(QUERIES[0], pd.read_parquet(events_dir / "events.parquet"))
    shuffled = truth.sample(frac=1.0, random_state=1)
    assert suite.disagreement(truth, shuffled, KEYS) is None
    assert suite.checksum(truth, KEYS) == suite.checksum(shuffled, KEYS)
    wrong = shuffled.copy()
    wrong.iloc[3, wrong.columns.get_loc("s")] += 1e-6
    assert "column s differs" in (suite.disagreement(truth, wrong, KEYS) or "")
    assert "rows" in (suite.disagreement(truth, truth.iloc[1:], KEYS) or "")
