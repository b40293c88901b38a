"""Nexmark queries in DuckDB SQL over the Parquet tables of
`generator.nexmark` (views ``person``, ``auction``, ``bid``, read afresh by
every query). Windows are integer arithmetic on epoch ms (floor division;
every time is after 1970): a tumbling window starts at ``t // d * d``, a
row is in the hopping windows starting at ``t // h * h - k * h`` for
``k < d / h``, and sessions are running sums of "more than the gap after
the previous bid" flags. Output columns: `Query.columns`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.nexmark import HOP_MS, LAST_AUCTIONS, WINDOW_MS

TABLES = ("person", "auction", "bid")
D, H = WINDOW_MS, HOP_MS

SQL = {
    "q5": f"""
        WITH counts AS (
            SELECT auction, start AS window_start_ms, start + {D} AS window_end_ms, count(*) AS num
            FROM (SELECT auction, date_time_ms // {H} * {H} - k * {H} AS start
                  FROM bid CROSS JOIN range({D // H}) AS hops(k))
            GROUP BY auction, start)
        SELECT auction, window_start_ms, window_end_ms, num FROM counts
        QUALIFY num = max(num) OVER (PARTITION BY window_start_ms)""",
    "q6": f"""
        WITH closed AS (
            SELECT a.id, a.seller, a.expires_ms, max(b.price) AS price
            FROM auction a JOIN bid b ON b.auction = a.id AND b.date_time_ms BETWEEN a.date_time_ms AND a.expires_ms
            GROUP BY a.id, a.seller, a.expires_ms, a.reserve
            HAVING max(b.price) >= a.reserve)
        SELECT seller, id AS auction, expires_ms,
               avg(price) OVER (PARTITION BY seller ORDER BY expires_ms, id
                                ROWS BETWEEN {LAST_AUCTIONS - 1} PRECEDING AND CURRENT ROW) AS avg_price
        FROM closed""",
    "q7": f"""
        WITH maxima AS (
            SELECT date_time_ms // {D} * {D} + {D} AS window_end_ms, max(price) AS maxprice
            FROM bid GROUP BY window_end_ms)
        SELECT b.auction, b.price, b.bidder, b.date_time_ms
        FROM bid b JOIN maxima m
          ON b.price = m.maxprice AND b.date_time_ms BETWEEN m.window_end_ms - {D} AND m.window_end_ms""",
    "q8": f"""
        WITH p AS (SELECT DISTINCT id, name, date_time_ms // {D} * {D} AS window_start_ms FROM person),
             s AS (SELECT DISTINCT seller, date_time_ms // {D} * {D} AS window_start_ms FROM auction)
        SELECT p.id, p.name, p.window_start_ms
        FROM p JOIN s ON p.id = s.seller AND p.window_start_ms = s.window_start_ms""",
    # a bid more than the gap after the bidder's previous one opens a session; the default RANGE frame
    # gives tied times the same running sum, whatever their order
    "q11": f"""
        WITH flagged AS (
            SELECT bidder, date_time_ms,
                   CASE WHEN date_time_ms - lag(date_time_ms) OVER (PARTITION BY bidder ORDER BY date_time_ms)
                             <= {D} THEN 0 ELSE 1 END AS opens
            FROM bid),
        sessions AS (
            SELECT bidder, date_time_ms, sum(opens) OVER (PARTITION BY bidder ORDER BY date_time_ms) AS session
            FROM flagged)
        SELECT bidder, min(date_time_ms) AS window_start_ms, max(date_time_ms) + {D} AS window_end_ms,
               count(*) AS bid_count
        FROM sessions GROUP BY bidder, session""",
    "q12": f"""
        WITH counts AS (
            SELECT bidder, time_bucket(INTERVAL {D // 1000} SECOND, now()) AS window_start, count(*) AS bid_count
            FROM bid GROUP BY bidder, window_start)
        SELECT bidder, sum(bid_count)::BIGINT AS bid_count FROM counts GROUP BY bidder""",
}


def views(where: Path) -> str:
    """The statements making a view per table of `where`."""
    return "; ".join(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{where / table}.parquet')"
                     for table in TABLES)


def connect(where: Path) -> Any:
    """An in-memory DuckDB connection with a view per table of `where`."""
    import duckdb

    con = duckdb.connect()
    con.execute(views(where))
    return con
