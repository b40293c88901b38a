"""Nexmark q5, q6, q7, q8, q11 and q12 on wid, Spark, DuckDB and Flink.

    python -m benchmarks run [--quick] --only nexmark

Data: `benchmarks.nexmark.generator.nexmark` events (person : auction : bid
= 1 : 3 : 46, 10,000 events per second of event time), 500,000 with --quick,
else 10M. Queries and their output columns: `benchmarks.nexmark`. Engines,
in order (wid first: the others are checked against it):

- ``wid``: wid does the windows (`queries_wid`), and wid's variants
  (``wid_window_join``: q7's join back as a wid window join);
- ``spark``: Spark's `window`, `session_window` and SQL window functions
  (`queries_spark`);
- ``duckdb``: the same queries in SQL (`queries_duckdb`);
- ``flink``: Flink SQL (`benchmarks.peers.flink.nexmark_engine`) for q5,
  q7, q8 and q11 (q6 is not expressible in Flink SQL; q12's windows depend
  on the wall clock, so only Spark and DuckDB's totals are comparable).

Every timed run reads its tables from the files (Parquet; Flink the CSV
copy) and computes the whole output into a sink (Spark's ``noop``,
DuckDB's own temporary table). Throughput is the input events per second:
all events, whichever tables the query reads, as Nexmark reports it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import suite
from benchmarks.nexmark import QUERIES, Query, generator, queries_duckdb, queries_spark, queries_wid
from benchmarks.nexmark.queries_spark import SparkQuery
from benchmarks.peers.duckdb_peer import duckdb_run
from benchmarks.peers.spark_peers import spark_run

TITLE = "Nexmark q5, q6, q7, q8, q11, q12 (wid, Spark, DuckDB, Flink)"
EVENTS = {True: 500_000, False: 10_000_000}  # by ctx.quick
SEED = 1
Run = Callable[[bool], suite.Output | None]  # see suite.engine


def run(ctx: Any) -> list[dict[str, Any]]:
    """One record per query (see `benchmarks.suite.run_scenario`)."""
    events = EVENTS[ctx.quick]
    where = generator.nexmark(events, SEED)
    return [suite.run_scenario(scenario(ctx.spark, q, where, events), ctx.repeats) for q in QUERIES.values()]


def scenario(spark: Any, query: Query, where: Path, events: int) -> suite.Scenario:
    """`query`'s engines over the events under `where`."""
    variants = queries_wid.VARIANTS.get(query.name, {})
    engines = [suite.engine("wid", on_spark(spark, queries_wid.QUERY[query.name], where)),
               *(suite.engine(name, on_spark(spark, q, where)) for name, q in variants.items()),
               suite.engine("spark", on_spark(spark, queries_spark.QUERY[query.name], where)),
               suite.engine("duckdb", on_duckdb(queries_duckdb.SQL[query.name], where))]
    if query.flink:
        engines += flink(query.name, where)
    return suite.Scenario(f"nexmark_{query.name}", query.title, events, query.keys, engines,
                          {"events": events, "seed": SEED, "query": query.name, "columns": list(query.columns)})


def on_spark(spark: Any, query: SparkQuery, where: Path) -> Run:
    """The query's output as pandas (`collect`), else into Spark's ``noop`` sink."""
    return spark_run(lambda: query(spark, where), lambda df: df)


def on_duckdb(sql: str, where: Path) -> Run:
    """The query's output as pandas (`collect`), else into a temporary table."""
    return duckdb_run(sql, setup=queries_duckdb.views(where))


def flink(query: str, where: Path) -> list[suite.Engine]:
    """Flink's engine for `query`, or none when `benchmarks.peers.flink`
    cannot be imported (it is the Flink peer's module; PyFlink itself runs
    in its own environment and reports itself as not run when missing)."""
    try:
        from benchmarks.peers.flink import nexmark_engine
    except ImportError:  # the Flink peer is not in this checkout: leave Flink out
        return []
    return [nexmark_engine(query, where)]


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """Throughput (input events per second) per query and engine, as
    grouped bars on a log scale, to ``out / "nexmark.png"``."""
    from benchmarks.plots import throughput_bars

    events = records[0]["rows"] if records else 0
    return [throughput_bars(records, out / "nexmark.png", f"Nexmark, {events:,} events (engines that agree with wid)",
                            [r["params"]["query"] for r in records])]
