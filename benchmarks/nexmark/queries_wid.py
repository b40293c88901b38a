"""Nexmark queries with wid doing every window: `wid.aggregate` with a
`Window` (hopping, tumbling, session, count and processing-time tumbling
windows). The plain-Spark steps around the windows (q5's filter, q6's
winning bids, q7's and q8's joins, q12's totals) are `queries_spark`'s,
shared with Spark's native versions. `VARIANTS` are further wid versions
measured beside them (q7's join back as a `wid.window_join`).

Each query is ``(spark, where) -> DataFrame`` with `Query.columns` (see
`benchmarks.nexmark`), reading the Parquet tables under `where` afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from benchmarks.nexmark import HOP_MS, LAST_AUCTIONS, QUERIES, WINDOW_MS
from benchmarks.nexmark.queries_spark import (
    SparkQuery,
    closed_auctions,
    highest_bids,
    hottest,
    new_sellers,
    read,
    totals,
)
from wid.spec import Aggregation, Window

COUNT = Aggregation("count", as_="n")
EVENT_TIME: dict[str, Any] = {"event_time_column": "date_time_ms", "event_time_unit": "ms"}  # the tables' event time, epoch ms


def aggregate(df: DataFrame, window: Window) -> DataFrame:
    """`wid.aggregate`, with ``window_start_ms`` and ``window_end_ms`` (epoch
    ms) in place of wid's timestamps ``window_start`` and ``window_end``."""
    out = wid.aggregate(df, window)
    bounds = F.unix_millis("window_start").alias("window_start_ms"), F.unix_millis("window_end").alias("window_end_ms")
    return out.select(*bounds, *(c for c in out.columns if c not in ("window_start", "window_end")))


def q5(spark: Any, where: Path) -> DataFrame:
    hop = Window(kind="hopping", duration_ms=WINDOW_MS, hop_ms=HOP_MS, group_by=("auction",),
                 aggregations=(Aggregation("count", as_="num"),), **EVENT_TIME)
    return hottest(aggregate(read(spark, where, "bid"), hop))


def q6(spark: Any, where: Path) -> DataFrame:
    """A count window of the seller's last 10 closed auctions, one per closed
    auction (hop 1 row; early windows are partial); the last auction of the
    extent, by (expires_ms, id), is the one it is reported for."""
    last = Window(kind="count", size_rows=LAST_AUCTIONS, hop_rows=1, partition_by=("seller",),
                  event_time_column="expires_ms", event_time_unit="ms", tie_breaker="id",
                  aggregations=(Aggregation("avg", "price", as_="avg_price"), Aggregation("last", "id", as_="auction")))
    out = aggregate(closed_auctions(spark, where), last)
    return out.select("seller", "auction", F.col("window_end_ms").alias("expires_ms"), "avg_price")


def maxima(spark: Any, where: Path) -> DataFrame:
    """q7's window: the highest price per tumbling window, as
    (window_end_ms, maxprice)."""
    tumble = Window(kind="tumbling", duration_ms=WINDOW_MS, aggregations=(Aggregation("max", "price", as_="maxprice"),),
                    **EVENT_TIME)
    return aggregate(read(spark, where, "bid"), tumble).select("window_end_ms", "maxprice")


def q7(spark: Any, where: Path) -> DataFrame:
    """The maximum per tumbling window (wid), joined back to the bids by
    Spark (a broadcast of the few window rows)."""
    return highest_bids(read(spark, where, "bid"), maxima(spark, where))


def q7_window_join(spark: Any, where: Path) -> DataFrame:
    """q7 with the join back as a wid window join too: each window end t
    with the bids of its price in ``[t - 10 s, t]`` (matching price, one
    row per matching bid). Each side is shuffled by price, where Spark
    broadcasts the few window rows: measured as a variant, not as wid."""
    bids = read(spark, where, "bid").select("price", "auction", "bidder", F.col("date_time_ms").alias("bid_ms"),
                                            "date_time_ms")
    joined = wid.window_join(maxima(spark, where), bids, window=(-WINDOW_MS, 0),
                             matching_column=(["maxprice"], ["price"]), time_column=("window_end_ms", "bid_ms"),
                             time_unit="ms", metrics=["auction", "bidder", "date_time_ms"])
    return joined.select("auction", F.col("maxprice").alias("price"), "bidder", "date_time_ms")


def q8(spark: Any, where: Path) -> DataFrame:
    """Distinct rows per window are groups of a tumbling window (with a
    count, as a wid window needs an aggregation)."""
    def groups(keys: tuple[str, ...]) -> Window:
        return Window(kind="tumbling", duration_ms=WINDOW_MS, group_by=keys, aggregations=(COUNT,), **EVENT_TIME)

    persons = aggregate(read(spark, where, "person"), groups(("id", "name")))
    return new_sellers(persons, aggregate(read(spark, where, "auction"), groups(("seller",))))


def q11(spark: Any, where: Path) -> DataFrame:
    session = Window(kind="session", gap_ms=WINDOW_MS, group_by=("bidder",),
                     aggregations=(Aggregation("count", as_="bid_count"),), **EVENT_TIME)
    return aggregate(read(spark, where, "bid"), session).select(*QUERIES["q11"].columns)


def q12(spark: Any, where: Path) -> DataFrame:
    """The totals read no window bounds, so the windows are `wid.aggregate`'s
    own, as Spark's query leaves its ``window`` struct (no bounds in ms)."""
    tumble = Window(kind="tumbling", duration_ms=WINDOW_MS, time_mode="processing", group_by=("bidder",),
                    aggregations=(Aggregation("count", as_="bid_count"),))
    return totals(wid.aggregate(read(spark, where, "bid"), tumble))


QUERY: dict[str, SparkQuery] = {"q5": q5, "q6": q6, "q7": q7, "q8": q8, "q11": q11, "q12": q12}
VARIANTS: dict[str, dict[str, SparkQuery]] = {"q7": {"wid_window_join": q7_window_join}}  # extra engines
