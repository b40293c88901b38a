"""Nexmark queries on Spark's own window operators (`F.window`,
`F.session_window`, SQL window functions), and the plain-Spark steps
around the windows that wid's versions (`queries_wid`) share.

Each query is ``(spark, where) -> DataFrame`` with `Query.columns` (see
`benchmarks.nexmark`), reading the Parquet tables under `where` afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F

from benchmarks.nexmark import HOP_MS, LAST_AUCTIONS, QUERIES, WINDOW_MS

SparkQuery = Callable[[Any, Path], DataFrame]


def read(spark: Any, where: Path, table: str) -> DataFrame:
    """Table ``person``, ``auction`` or ``bid`` of `generator.nexmark`."""
    return spark.read.parquet(str(where / f"{table}.parquet"))


def ms(column: str) -> Column:
    """Epoch ms column as a Spark timestamp (UTC sessions)."""
    return F.timestamp_millis(F.col(column))


def window_ms(window: str = "window") -> tuple[Column, Column]:
    """A Spark window struct's start and end, as epoch ms."""
    return (F.unix_millis(F.col(f"{window}.start")).alias("window_start_ms"),
            F.unix_millis(F.col(f"{window}.end")).alias("window_end_ms"))


def seconds(duration_ms: int) -> str:
    return f"{duration_ms // 1000} seconds"


# -- steps around the windows, shared with queries_wid -------------------------------------------

def hottest(counts: DataFrame) -> DataFrame:
    """q5's filter: of (auction, window_start_ms, window_end_ms, num), the
    rows whose num is their window's largest."""
    top = F.max("num").over(W.partitionBy("window_start_ms"))
    return counts.withColumn("_top", top).where(F.col("num") == F.col("_top")).select(*QUERIES["q5"].columns)


def highest_bids(bids: DataFrame, maxima: DataFrame) -> DataFrame:
    """q7's join back: the bids whose price is the `maxima` row's maxprice
    and whose time is in ``[window_end_ms - 10 s, window_end_ms]``."""
    b, m = bids.alias("b"), maxima.alias("m")
    end = F.col("m.window_end_ms")
    on = (F.col("b.price") == F.col("m.maxprice")) & F.col("b.date_time_ms").between(end - WINDOW_MS, end)
    return b.join(m, on).select(*(F.col(f"b.{c}") for c in QUERIES["q7"].columns))


def new_sellers(persons: DataFrame, sellers: DataFrame) -> DataFrame:
    """q8's join: (id, name, window_start_ms) of `persons` whose id is a
    seller of (seller, window_start_ms) in the same window."""
    p, s = persons.alias("p"), sellers.alias("s")
    on = (F.col("p.id") == F.col("s.seller")) & (F.col("p.window_start_ms") == F.col("s.window_start_ms"))
    return p.join(s, on).select("p.id", "p.name", "p.window_start_ms")


def closed_auctions(spark: Any, where: Path) -> DataFrame:
    """q6's first step: the closed auctions (id, seller, expires_ms, price),
    price being the winning bid (see `benchmarks.nexmark`)."""
    a = read(spark, where, "auction").alias("a")
    b = read(spark, where, "bid").select("auction", "price", "date_time_ms").alias("b")
    on = (F.col("b.auction") == F.col("a.id")) & F.col("b.date_time_ms").between(F.col("a.date_time_ms"),
                                                                                  F.col("a.expires_ms"))
    won = a.join(b, on).groupBy("a.id", "a.seller", "a.expires_ms", "a.reserve").agg(F.max("b.price").alias("price"))
    return won.where(F.col("price") >= F.col("reserve")).select("id", "seller", "expires_ms", "price")


def totals(counts: DataFrame) -> DataFrame:
    """q12's comparison: (bidder, bid_count) summed over every window."""
    return counts.groupBy("bidder").agg(F.sum("bid_count").alias("bid_count"))


# -- the queries ----------------------------------------------------------------------------------

def q5(spark: Any, where: Path) -> DataFrame:
    hop = F.window(ms("date_time_ms"), seconds(WINDOW_MS), seconds(HOP_MS))
    counts = read(spark, where, "bid").groupBy("auction", hop).agg(F.count("*").alias("num"))
    return hottest(counts.select("auction", *window_ms(), "num"))


def q6(spark: Any, where: Path) -> DataFrame:
    last = W.partitionBy("seller").orderBy("expires_ms", "id").rowsBetween(1 - LAST_AUCTIONS, W.currentRow)
    closed = closed_auctions(spark, where)
    return closed.select("seller", F.col("id").alias("auction"), "expires_ms",
                         F.avg("price").over(last).alias("avg_price"))


def q7(spark: Any, where: Path) -> DataFrame:
    bids = read(spark, where, "bid")
    maxima = bids.groupBy(F.window(ms("date_time_ms"), seconds(WINDOW_MS))).agg(F.max("price").alias("maxprice"))
    return highest_bids(bids, maxima.select(window_ms()[1], "maxprice"))


def q8(spark: Any, where: Path) -> DataFrame:
    tumble = F.window(ms("date_time_ms"), seconds(WINDOW_MS)).alias("window")
    persons = read(spark, where, "person").select("id", "name", tumble).distinct()
    sellers = read(spark, where, "auction").select("seller", tumble).distinct()
    return new_sellers(persons.select("id", "name", window_ms()[0]), sellers.select("seller", window_ms()[0]))


def q11(spark: Any, where: Path) -> DataFrame:
    session = F.session_window(ms("date_time_ms"), seconds(WINDOW_MS))
    counts = read(spark, where, "bid").groupBy("bidder", session).agg(F.count("*").alias("bid_count"))
    return counts.select("bidder", *window_ms("session_window"), "bid_count")


def _q12(bids: DataFrame) -> DataFrame:
    tumble = F.window(F.current_timestamp(), seconds(WINDOW_MS))
    return totals(bids.groupBy("bidder", tumble).agg(F.count("*").alias("bid_count")))


def q12(spark: Any, where: Path) -> DataFrame:
    return _q12(read(spark, where, "bid"))


def q12_checked(spark: Any, where: Path) -> DataFrame:
    """q12 with wid's one input check of it: a bid with a NULL bidder is not
    counted (wid sends it to the dead letters; Spark's q12 counts it under a
    NULL bidder). On processing time the key is the only column checked."""
    return _q12(read(spark, where, "bid").where(F.col("bidder").isNotNull()))


QUERY: dict[str, SparkQuery] = {"q5": q5, "q6": q6, "q7": q7, "q8": q8, "q11": q11, "q12": q12}
# Spark's queries doing the input checks wid does, where Spark's own query skips a check that costs
# measurable time beside it (`benchmarks.scenarios.overhead`)
CHECKED: dict[str, SparkQuery] = {"q12": q12_checked}
