"""DuckDB (batch) on a `WindowQuery` over the events Parquet.

DuckDB has no window table functions, so the windows are written in SQL the
way a DuckDB user would: tumbling by integer division of ``ts_ms``; hopping
by joining each row to its ``size / slide`` window starts
(``generate_series``); sessions by gaps and islands (a new session where the
gap to the key's previous row is more than `gap_ms`: a row exactly at the
session's end joins it, as in Spark's ``session_window``, Flink and wid,
`wid.semantics.sessions`). Each timed run
reads the Parquet file and materialises the whole result in a temporary
table; the warm-up returns it as a pandas frame (`benchmarks.query.OUTPUT`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.query import WindowQuery
from benchmarks.suite import INSTALL, Engine, Output, Unavailable, engine

AGGS = "count(*) AS n, sum(v) AS s, max(v) AS hi"


def window_sql(q: WindowQuery, parquet: Path) -> str:
    """The query text of `q` over `parquet`."""
    src = f"read_parquet('{parquet}')"
    if q.kind == "tumbling":
        return (f"SELECT k, ts_ms // {q.size_ms} * {q.size_ms} AS window_start_ms, "
                f"ts_ms // {q.size_ms} * {q.size_ms} + {q.size_ms} AS window_end_ms, {AGGS} "
                f"FROM {src} GROUP BY ALL")
    if q.kind == "hopping":
        size, slide = q.size_ms, q.slide_ms
        return (f"SELECT k, window_start_ms, window_start_ms + {size} AS window_end_ms, {AGGS} FROM "
                f"(SELECT k, v, unnest(generate_series(ts_ms // {slide} * {slide} - {size} + {slide}, "
                f"ts_ms // {slide} * {slide}, {slide})) AS window_start_ms FROM {src}) GROUP BY ALL")
    gap = q.gap_ms
    return (f"SELECT k, min(ts_ms) AS window_start_ms, max(ts_ms) + {gap} AS window_end_ms, {AGGS} FROM "
            f"(SELECT *, sum(new) OVER (PARTITION BY k ORDER BY ts_ms, v ROWS UNBOUNDED PRECEDING) AS session FROM "
            f"(SELECT *, CASE WHEN ts_ms - lag(ts_ms) OVER (PARTITION BY k ORDER BY ts_ms, v) <= {gap} "
            f"THEN 0 ELSE 1 END AS new FROM {src})) GROUP BY k, session")


def duckdb_engine(q: WindowQuery, data_dir: Path) -> Engine:
    return engine("duckdb", duckdb_run(window_sql(q, data_dir / "events.parquet")))


def duckdb_run(sql: str, threads: int = 2, setup: str = "") -> Callable[[bool], Output | None]:
    """A `suite.engine` run of `sql` on `threads` threads (the cores Spark
    gets), on a fresh connection after the statements `setup` (e.g. views):
    the warm-up returns the result, timed runs materialise it."""
    try:
        import duckdb
    except ImportError as e:
        raise Unavailable(INSTALL) from e

    def run(collect: bool) -> Output | None:
        with duckdb.connect() as con:
            con.execute(f"SET threads = {threads}")
            if setup:
                con.execute(setup)
            if collect:
                return con.sql(sql).df()
            con.execute(f"CREATE TEMP TABLE out AS {sql}")
            return None
    return run
