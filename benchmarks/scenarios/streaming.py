"""Streaming: the same windows on live engines, with their state.

The events (`benchmarks.data.events`, in event-time order) land as
`FILES` Parquet files (a quarter as many with ``--quick``), read in order
with Spark's available-now trigger, `PER_TRIGGER` files per micro-batch,
lateness 0. A last file holds two rows of a flush key (-1) a day and two
days later, so every window of the data closes on Spark too (Flink closes
them at the end of its bounded source); the flush key's windows are left
out of every output.

- ``wid``: `wid.window_result` on the stream, as wid plans it (the WID
  operator, partials per pane in Spark's RocksDB state store, or Spark's
  own aggregation where wid measured it faster; the record names the plan);
- ``spark streaming``: ``withWatermark`` plus ``groupBy(k, window(...))``
  in append mode;
- ``flink``: the same query in PyFlink's streaming mode (if set up).

Besides time and RSS, each Spark engine reports its peak state (rows and
the state store's memory, from Spark's progress) beside the bound
`wid explain` predicts (`wid.spark.explain.state_bound`, with
``max_groups_per_window`` = the key count).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks import data
from benchmarks.harness import arrive_in_name_order, available_now
from benchmarks.peers.all_peers import window_engines
from benchmarks.peers.spark_peers import bounds_ms, spark_window, window_of
from benchmarks.query import KEYS, OUTPUT, WindowQuery
from benchmarks.suite import Engine, Output, Run, Scenario, in_process, run_scenario
from wid.spark.explain import state_bound

TITLE = "streaming: wid's operator, Spark's streaming aggregation and Flink, with peak state against wid explain"
FILES, PER_TRIGGER, KEYS_N = 16, 2, 100
QUERIES = (WindowQuery("tumbling", 60_000), WindowQuery("hopping", 600_000, 60_000))


def landed(events_dir: Path, files: int = FILES) -> Path:
    """`events_dir`'s events as `files` ordered Parquet files plus the flush file."""
    where = events_dir / f"landing_{files}"
    if where.exists():
        return where
    table = pq.read_table(events_dir / "events.parquet")
    where.mkdir()
    bounds = np.linspace(0, table.num_rows, files + 1).astype(int)
    for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
        pq.write_table(table.slice(a, b - a), where / f"part-{i:05d}.parquet")
    last = table.column("ts_ms")[-1].as_py()
    flush = pa.table({"k": pa.array([-1, -1], pa.int32()), "ts_ms": [last + 86_400_000, last + 2 * 86_400_000],
                      "v": [0.0, 0.0]})
    pq.write_table(flush, where / f"part-{files:05d}.parquet")
    arrive_in_name_order(where)
    return where


def stream_engine(spark: Any, name: str, where: Path, build: Callable[[DataFrame], DataFrame],
                  bound_bytes: int | None) -> Engine:
    """A Spark streaming engine: `build` turns the source stream into the
    per-micro-batch output rows (`OUTPUT` columns plus the flush key)."""
    schema = spark.read.parquet(str(where)).schema

    def run(collect: bool, state: dict[str, Any]) -> Output | None:
        source = spark.readStream.schema(schema).option("maxFilesPerTrigger", PER_TRIGGER).parquet(str(where))
        found: list[Any] = []

        def handle(df: DataFrame, _: int) -> None:
            rows = df.where(F.col("k") >= 0)
            if collect:
                found.extend(rows.collect())
            else:
                rows.write.format("noop").mode("overwrite").save()

        with tempfile.TemporaryDirectory(prefix="wid-bench-ck-") as ck:
            _, query = available_now(build(source), handle, ck)
        ops = [op for p in query.recentProgress for op in (p["stateOperators"] or [])]
        state.update(peak_state_rows=max((int(o["numRowsTotal"]) for o in ops), default=0),
                     peak_state_mib=max((int(o["memoryUsedBytes"]) for o in ops), default=0) / 2**20,
                     state_bound_mib=None if bound_bytes is None else bound_bytes / 2**20)
        if not collect:
            return None
        import pandas as pd

        return pd.DataFrame([r.asDict() for r in found], columns=list(OUTPUT))

    state: dict[str, Any] = {}

    def measure(repeats: int) -> Run:
        r = in_process(name, lambda collect: run(collect, state), repeats)
        r.extra = state
        return r
    return Engine(name, measure, lambda collect: run(collect, state), lambda: state)


def wid_build(q: WindowQuery, planned: list[str]) -> tuple[Callable[[DataFrame], DataFrame], int | None]:
    """wid's plan for `q` on the stream (the WID operator; `planned` gets
    the form), and the
    state bound `wid explain` gives."""
    w = replace(window_of(q), max_groups_per_window=KEYS_N + 1)

    def build(source: DataFrame) -> DataFrame:
        result = wid.window_result(source, w)
        planned.append(result.explain.form)
        return result.output.select("k", *bounds_ms(F.col("window_start"), F.col("window_end")), "n", "s", "hi")

    return build, state_bound(w)[0]


def spark_build(q: WindowQuery) -> Callable[[DataFrame], DataFrame]:
    def build(source: DataFrame) -> DataFrame:
        df = source.withColumn("ts", F.timestamp_millis("ts_ms")).withWatermark("ts", "0 seconds")
        out = df.groupBy("k", spark_window(q, F.col("ts")).alias("w")).agg(
            F.count("*").alias("n"), F.sum("v").alias("s"), F.max("v").alias("hi"))
        return out.select("k", *bounds_ms(F.col("w.start"), F.col("w.end")), "n", "s", "hi")
    return build


def run(ctx: Any) -> list[dict[str, Any]]:
    rows, files = (200_000, FILES // 4) if ctx.quick else (2_000_000, FILES)
    events_dir = data.events(rows, KEYS_N)
    where = landed(events_dir, files)
    records = []
    for q in QUERIES:
        planned: list[str] = []
        build, bound = wid_build(q, planned)
        engines = [stream_engine(ctx.spark, "wid", where, build, bound),
                   stream_engine(ctx.spark, "spark streaming", where, spark_build(q), None),
                   *window_engines(ctx.spark, q, events_dir, ("flink",))]
        s = Scenario(f"streaming_{q.kind}_{rows}", f"{q.label}, {KEYS_N} keys, {rows:,} rows, {files} files, "
                     f"{PER_TRIGGER} per micro-batch", rows, KEYS, engines, {"keys": KEYS_N, "files": files})
        records.append(run_scenario(s, ctx.repeats))
        records[-1]["params"]["wid_plan"] = planned[0] if planned else None
        print(f"  wid's plan: {records[-1]['params']['wid_plan']}")
        for e in records[-1]["engines"]:
            if "peak_state_rows" in e:
                print(f"  {e['engine']}: peak state {e['peak_state_rows']:,} rows, {e['peak_state_mib']:.1f} MiB; "
                      f"wid explain bound {fmt_mib(e['state_bound_mib'])}")
    return records


def fmt_mib(value: float | None) -> str:
    return "n/a (Spark's own operator)" if value is None else f"{value:.3f} MiB"


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    from benchmarks.plots import throughput_bars

    return [throughput_bars(records, out / "streaming.png", "streaming windows: rows per second")]
