"""Windows in a session whose time zone is not UTC, against Spark's own
``window()`` and ``session_window()`` in the same session: over
``TIMESTAMP_NTZ`` event times windows keep that type and align on its wall
clock (daylight-saving gaps and repeated hours included); over
``TIMESTAMP`` they stay aligned on the epoch. Batch and stream alike."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from pyspark.sql import types as T

import wid
from wid.spark import stream_query
from wid.spark.compile import compile_window
from wid.spark.operator.query import windows_of
from wid.spec import Aggregation, Window

ZONE = "America/Los_Angeles"
# wall-clock times around Los Angeles' 2016 changes: 02:30 on 13 March does not exist there, 01:30 on
# 6 November happens twice
WALL = [datetime(2016, 3, 12, 23, 50), datetime(2016, 3, 13, 2, 30), datetime(2016, 3, 13, 3, 10),
        datetime(2016, 3, 27, 17, 0), datetime(2016, 11, 6, 1, 30), datetime(2016, 11, 6, 1, 45),
        datetime(1969, 12, 31, 23, 59, 59)]
N = (Aggregation("count", as_="n"),)


@pytest.fixture
def los_angeles(spark: Any) -> Iterator[Any]:
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        yield spark
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def rows(spark: Any, time_type: str) -> Any:
    ntz = spark.createDataFrame([(t, "ab"[i % 2]) for i, t in enumerate(WALL)],
                                T.StructType([T.StructField("ts", T.TimestampNTZType()), T.StructField("k", T.StringType())]))
    return ntz if time_type == "timestamp_ntz" else ntz.withColumn("ts", F.col("ts").cast("timestamp"))


def spark_windows(df: Any, span: Any) -> set[tuple[Any, ...]]:
    out = df.groupBy(span.alias("w"), "k").agg(F.count("*").alias("n"))
    return {(r.w.start, r.w.end, r.k, r.n) for r in out.collect()}


def wid_windows(out: Any) -> set[tuple[Any, ...]]:
    return {(r.window_start, r.window_end, r.k, r.n) for r in out.collect()}


@pytest.mark.parametrize("time_type", ["timestamp_ntz", "timestamp"])
@pytest.mark.parametrize(("window", "span"), [
    (Window(kind="tumbling", duration_ms=86_400_000, event_time_column="ts", group_by=("k",), aggregations=N),
     lambda: F.window("ts", "1 day")),
    (Window(kind="hopping", duration_ms=7_200_000, hop_ms=1_800_000, event_time_column="ts", group_by=("k",),
            aggregations=N), lambda: F.window("ts", "2 hours", "30 minutes")),
    (Window(kind="session", gap_ms=3_600_000, event_time_column="ts", group_by=("k",), aggregations=N),
     lambda: F.session_window("ts", "1 hour")),
], ids=["tumbling", "hopping", "session"])
def test_batch_windows_equal_spark_s_in_a_non_utc_session(los_angeles: Any, time_type: str, window: Window,
                                                          span: Any) -> None:
    df = rows(los_angeles, time_type)
    out = wid.aggregate(df, window)
    assert out.schema[window.window_start_column].dataType == df.schema["ts"].dataType
    assert wid_windows(out) == spark_windows(df, span())


def test_a_stream_of_wall_clock_times_gives_the_batch_windows(los_angeles: Any, tmp_path: Path) -> None:
    window = Window(kind="tumbling", duration_ms=3_600_000, event_time_column="ts", group_by=("k",), aggregations=N,
                    max_groups_per_window=10)
    land = tmp_path / "land"
    land.mkdir()
    times = [*sorted(WALL), max(WALL) + timedelta(days=1)]  # in time order, then a row that closes every window
    for i, t in enumerate(times):
        (land / f"part-{i:02d}.json").write_text(json.dumps({"ts": t.isoformat(), "k": "ab"[i % 2]}) + "\n")
        os.utime(land / f"part-{i:02d}.json", (1_000_000 + i, 1_000_000 + i))
    stream = los_angeles.readStream.schema("ts TIMESTAMP_NTZ, k STRING").option("maxFilesPerTrigger", 2).json(str(land))
    result = compile_window(stream, window)
    got: set[tuple[Any, ...]] = set()
    query = stream_query.start(result.operator, str(tmp_path / "ck"),
                               lambda df, _: got.update(wid_windows(windows_of(df, window, wall_clock=True))),
                               {"availableNow": True})
    query.awaitTermination()
    batch = los_angeles.createDataFrame([(t, "ab"[i % 2]) for i, t in enumerate(times[:-1])], "ts timestamp_ntz, k string")
    assert result.result.output.schema[window.window_start_column].dataType == T.TimestampNTZType()
    assert got == spark_windows(batch, F.window("ts", "1 hour"))
