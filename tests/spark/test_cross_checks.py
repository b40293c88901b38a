"""Independent cross-checks: Spark's own `window()`/`session_window()`,
DuckDB SQL and pandas compute the same windows without any wid code."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from wid.spec import Aggregation, Window

S = 1_000_000
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("min", "v", as_="lo"),
        Aggregation("max", "v", as_="hi"), Aggregation("avg", "v", as_="mean"))


def frame(seed: int, n: int = 3000, ties: bool = True) -> pd.DataFrame:
    """Random rows over [-1 h, +1 h] around the epoch (negative times
    included), 7 keys, some null values."""
    rng = np.random.default_rng(seed)
    ts = rng.integers(-3600 * S, 3600 * S, n)
    if ties:
        ts = (ts // S) * S  # whole seconds: many rows share a timestamp
    v = np.round(rng.normal(10, 5, n), 3)
    v[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"ts": ts, "k": rng.choice(list("abcdefg"), n), "v": v})


def spark_df(spark: Any, pdf: pd.DataFrame) -> DataFrame:
    df = spark.createDataFrame(pdf.astype(object).where(pdf.notna(), None), "ts long, k string, v double")
    return df.withColumn("t", F.timestamp_micros("ts"))


def nulls_first(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A sort key that tolerates None (sorted first, as in SQL)."""
    return tuple((x is not None, x if x is not None else 0) for x in row)


def rows_of(df: DataFrame, cols: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=nulls_first)


def assert_rows_close(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        for p, q in zip(x, y, strict=True):
            if isinstance(p, float) or isinstance(q, float):
                assert (p is None and q is None) or math.isclose(p, q, rel_tol=1e-9, abs_tol=1e-9), (x, y)
            else:
                assert p == q, (x, y)


def wid_rows(df: DataFrame, window: Window) -> list[tuple[Any, ...]]:
    out = wid.aggregate(df, window).select(
        F.unix_micros("window_start").alias("s_us"), F.unix_micros("window_end").alias("e_us"),
        "k", "n", "s", "lo", "hi", "mean")
    return rows_of(out, out.columns)


@pytest.mark.parametrize(("duration_ms", "hop_ms", "origin_ms"), [
    (60_000, None, 0), (60_000, None, 15_000), (600_000, 60_000, 0), (300_000, 120_000, 30_000), (7_000, 3_000, 0),
    (120_000, 60_000, 0), (5_000, 3_000, 1_000)])  # the last two: in 2 windows a row, so the copy form
def test_time_windows_against_spark_window(spark: Any, duration_ms: int, hop_ms: int | None, origin_ms: int) -> None:
    df = spark_df(spark, frame(1))
    kind = "tumbling" if hop_ms is None else "hopping"
    extra = {} if hop_ms is None else {"hop_ms": hop_ms}
    window = Window(kind=kind, duration_ms=duration_ms, origin_ms=origin_ms, event_time_column="t",
                    group_by=["k"], aggregations=AGGS, **extra)
    slide = f"{hop_ms or duration_ms} milliseconds"
    ref = df.groupBy("k", F.window("t", f"{duration_ms} milliseconds", slide, f"{origin_ms} milliseconds")).agg(
        F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.avg("v").alias("mean"))
    ref = ref.select(F.unix_micros("window.start").alias("s_us"), F.unix_micros("window.end").alias("e_us"),
                     "k", "n", "s", "lo", "hi", "mean")
    assert_rows_close(wid_rows(df, window), rows_of(ref, ref.columns))


def key_values(key_type: str) -> list[Any]:
    """Four values of `key_type`; -0.0 and 0.0, and NaN, are one group each in Spark (built lazily: a
    column needs the session)."""
    return {
        "double": lambda: [F.lit(-0.0), F.lit(0.0), F.lit(float("nan")), F.lit(1.5)],
        "date": lambda: [F.date_from_unix_date(F.lit(x)) for x in (-1, 0, 1, 20_000)],
        "decimal": lambda: [F.lit(x).cast("decimal(10,2)") for x in ("1.25", "-3.50", "0.00", "99.99")],
        "boolean": lambda: [F.lit(True), F.lit(False), F.lit(True), F.lit(None).cast("boolean")],
        "timestamp": lambda: [F.timestamp_micros(F.lit(x)) for x in (-1, 0, 1, 10**15)],
    }[key_type]()


@pytest.mark.parametrize("key_type", ["boolean", "date", "decimal", "double", "timestamp"])
def test_hopping_keys_of_every_type_against_spark_window(spark: Any, key_type: str) -> None:
    # the vectorised merge groups keys in NumPy: it must group them as Spark's own window() does
    pick = F.pmod(F.xxhash64("k", "ts"), F.lit(4)).cast("int")
    df = spark_df(spark, frame(6, n=2000)).withColumn("kk", F.array(*key_values(key_type))[pick])
    window = Window(kind="hopping", duration_ms=600_000, hop_ms=60_000, event_time_column="t", group_by=["kk"],
                    aggregations=AGGS)
    result = wid.window_result(df, window)
    assert "vectorised Arrow merge" in result.explain.form
    ref = df.where(F.col("kk").isNotNull()).groupBy("kk", F.window("t", "10 minutes", "1 minute")).agg(
        F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.avg("v").alias("mean")).select(F.col("window.start").alias("window_start"), "*")
    cols = [F.unix_micros("window_start"), (F.col("kk") + F.lit(0.0)).cast("string") if key_type == "double"
            else F.col("kk").cast("string"), "n", "s", "lo", "hi", "mean"]
    assert_rows_close(rows_of(result.output.select(*cols), ["*"]), rows_of(ref.select(*cols), ["*"]))


@pytest.mark.parametrize("gap", ["static", "dynamic"])
def test_sessions_against_spark_session_window(spark: Any, gap: str) -> None:
    pdf = frame(2, n=800)
    pdf["g"] = np.random.default_rng(3).integers(1, 120, len(pdf)) * 1000
    df = spark.createDataFrame(pdf.astype(object).where(pdf.notna(), None), "ts long, k string, v double, g long")
    df = df.withColumn("t", F.timestamp_micros("ts"))
    kw: dict[str, Any] = {"gap_ms": 45_000} if gap == "static" else {"gap_column": "g"}
    window = Window(kind="session", event_time_column="t", group_by=["k"], aggregations=AGGS, **kw)
    duration = F.lit("45 seconds") if gap == "static" else F.concat(F.col("g").cast("string"), F.lit(" milliseconds"))
    ref = df.groupBy("k", F.session_window("t", duration)).agg(
        F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"), F.max("v").alias("hi"),
        F.avg("v").alias("mean"))
    ref = ref.select(F.unix_micros("session_window.start").alias("s_us"),
                     F.unix_micros("session_window.end").alias("e_us"), "k", "n", "s", "lo", "hi", "mean")
    assert_rows_close(wid_rows(df, window), rows_of(ref, ref.columns))


DUCK_WINDOWS = """
WITH starts AS (
  SELECT s * {hop} + {origin} AS s_us
  FROM range((SELECT (min(ts) - {origin} - {dur}) // {hop} FROM t), (SELECT (max(ts) - {origin}) // {hop} + 1 FROM t)) r(s)
)
SELECT s_us, s_us + {dur} AS e_us, k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi, avg(v) AS mean
FROM starts JOIN t ON t.ts >= s_us AND t.ts < s_us + {dur}
GROUP BY ALL
"""


@pytest.mark.parametrize(("dur_ms", "hop_ms", "origin_ms"), [(60_000, 60_000, 0), (600_000, 60_000, 7_000), (9_000, 4_000, 0), (5_000, 3_000, 500)])
def test_time_windows_against_duckdb(spark: Any, dur_ms: int, hop_ms: int, origin_ms: int) -> None:
    t = frame(4)
    kind = "tumbling" if dur_ms == hop_ms else "hopping"
    extra = {} if kind == "tumbling" else {"hop_ms": hop_ms}
    window = Window(kind=kind, duration_ms=dur_ms, origin_ms=origin_ms, event_time_column="ts",
                    event_time_unit="us", group_by=["k"], aggregations=AGGS, **extra)
    con = duckdb.connect()
    con.register("t", t)
    sql = DUCK_WINDOWS.format(hop=hop_ms * 1000, dur=dur_ms * 1000, origin=origin_ms * 1000)
    ref = sorted((tuple(None if isinstance(x, float) and math.isnan(x) else x for x in r)
                  for r in con.execute(sql).fetchall()), key=nulls_first)
    assert_rows_close(wid_rows(spark_df(spark, t), window), ref)


ROLL_AGGS = (Aggregation("sum", "v", as_="rs"), Aggregation("count", "v", as_="rn"), Aggregation("max", "v", as_="rmax"))


def wid_rolling(spark: Any, t: pd.DataFrame, d_ms: int) -> list[tuple[Any, ...]]:
    window = Window(kind="rolling", duration_ms=d_ms, event_time_column="ts", event_time_unit="us",
                    group_by=["k"], aggregations=ROLL_AGGS)
    out = wid.aggregate(spark_df(spark, t).drop("t").withColumn("row", F.monotonically_increasing_id()), window)
    return sorted(((r["k"], r["ts"], r["v"], r["rs"], r["rn"], r["rmax"]) for r in out.collect()), key=nulls_first)


def test_rolling_against_pandas_without_ties(spark: Any) -> None:
    t = frame(5, n=1500, ties=False).drop_duplicates(["k", "ts"])
    t = t.assign(v=t["v"].fillna(0.0))  # pandas rolling counts NaN differently from SQL; use non-null values here
    got = wid_rolling(spark, t, 90_000)
    p = t.assign(time=pd.to_datetime(t["ts"], unit="us")).sort_values(["k", "time"])
    roll = p.groupby("k").rolling("90s", on="time", closed="right")["v"]
    p["rs"], p["rn"], p["rmax"] = roll.sum().values, roll.count().values, roll.max().values
    want = sorted((r.k, r.ts, r.v, r.rs, int(r.rn), r.rmax) for r in p.itertuples())
    assert_rows_close(got, want)


def test_rolling_against_duckdb_range_frame_with_ties(spark: Any) -> None:
    t = frame(6, n=2000, ties=True)
    got = wid_rolling(spark, t, 30_000)
    con = duckdb.connect()
    con.register("t", t)
    frame_sql = "OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN 29999999 PRECEDING AND CURRENT ROW)"
    ref = con.execute(f"SELECT k, ts, v, sum(v) {frame_sql}, count(v) {frame_sql}, max(v) {frame_sql} FROM t").fetchall()
    want = sorted((tuple(None if isinstance(x, float) and math.isnan(x) else x for x in r) for r in ref), key=nulls_first)
    got = sorted((tuple(None if isinstance(x, float) and math.isnan(x) else x for x in r) for r in got), key=nulls_first)
    assert_rows_close(got, want)


def test_cumulate_on_flights_emits_the_whole_last_period_as_duckdb(spark: Any) -> None:
    """Landmark windows of 1-day hops restarting every 7 days (Flink's
    CUMULATE) over the real 2013 departures: every window of every period
    that holds rows, the last period's windows past the latest departure
    included (the period is finite), as DuckDB computes them from the
    definition."""
    from examples.flights_data import flights as table

    flights = table()
    pdf = flights[["origin", "year", "month", "day", "dep_time"]].dropna()
    pdf = pdf.assign(ts=pd.to_datetime(pdf[["year", "month", "day"]]) + pd.to_timedelta(pdf["dep_time"] // 100, "h")
                     + pd.to_timedelta(pdf["dep_time"] % 100, "min"))[["origin", "ts"]]
    window = Window(kind="landmark", hop_ms=86_400_000, landmark_ms=1_356_998_400_000, max_duration_ms=7 * 86_400_000,
                    event_time_column="ts", group_by=("origin",), aggregations=(Aggregation("count", as_="n"),))
    got = wid.aggregate(spark.createDataFrame(pdf), window)
    want = duckdb.sql("""
        WITH r AS (SELECT origin, epoch_us(ts) AS us, (epoch_us(ts) - 1356998400000000) // 86400000000 AS q FROM pdf),
             w AS (SELECT DISTINCT origin, q // 7 * 7 + i AS wid FROM r, range(0, 7) t(i) WHERE q // 7 * 7 + i >= q)
        SELECT 1356998400000000 + w.wid // 7 * 7 * 86400000000 AS s, 1356998400000000 + (w.wid + 1) * 86400000000 AS e,
               w.origin, count(*) AS n
        FROM w JOIN r ON r.origin = w.origin AND r.q // 7 = w.wid // 7 AND r.q <= w.wid
        GROUP BY ALL""").fetchall()
    rows = [(r[0], r[1], r[2], r[3]) for r in got.select(F.unix_micros("window_start"), F.unix_micros("window_end"),
                                                          "origin", "n").collect()]
    assert sorted(rows) == sorted(want)
    last = max(pdf["ts"]).value // 1000
    assert any(e > last + 86_400_000_000 for _, e, _, _ in rows), "windows of the last period past the last departure"
