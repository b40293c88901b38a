"""Nexmark on wid, Spark, DuckDB and Flink: the events (`generator`), the
queries stated once here and written per engine (`queries_wid`,
`queries_spark`, `queries_duckdb`; Flink's in `benchmarks.peers.flink`),
measured by `benchmarks.scenarios.nexmark`.

Every version of a query reads the Parquet tables of `generator.nexmark`
and returns exactly `Query.columns` (times int64 epoch ms). Windows are
half-open ``[start, end)`` and aligned to the epoch; the queries follow
Nexmark's (nexmark/nexmark, ``nexmark-flink/src/main/resources/queries``):

- q5 hot items: HOP 10 s every 2 s, bids per auction; the auctions whose
  count is the window's largest.
- q6 average selling price by seller (not in Flink SQL): an auction's
  winning bid is its highest among the bids with ``auction.date_time_ms <=
  bid.date_time_ms <= auction.expires_ms``; with a winning bid of at least
  the reserve it closes at ``expires_ms``. For each closed auction, in
  (expires_ms, id) order per seller, the average winning price of that
  seller's last (up to) 10 closed auctions.
- q7 highest bid: the largest price per TUMBLE 10 s, joined back to the
  bids with that price and ``window_end - 10 s <= date_time_ms <=
  window_end`` (both ends in, as Nexmark's BETWEEN: a bid at exactly
  window_end may match too).
- q8 monitor new users: distinct (id, name) of persons per TUMBLE 10 s,
  joined to the distinct sellers of auctions of the same window.
- q11 user sessions: SESSION gap 10 s per bidder, bids per session (a
  session ends at its last bid plus the gap; a bid at exactly that end
  joins it, as in Spark and Flink).
- q12 processing-time windows: TUMBLE 10 s on the time each engine reads
  a row, bids per bidder; the compared output is each bidder's total over
  all windows (the windows depend on the wall clock, the totals do not).
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOW_MS = 10_000  # TUMBLE and HOP size, SESSION gap
HOP_MS = 2_000  # q5's slide
LAST_AUCTIONS = 10  # q6


@dataclass(frozen=True)
class Query:
    """A Nexmark query: output `columns` (in order), the `keys` that
    identify an output row, and whether Flink runs it."""

    name: str
    title: str
    columns: tuple[str, ...]
    keys: tuple[str, ...]
    flink: bool = True


QUERIES = {q.name: q for q in (
    Query("q5", "hot items (HOP 10 s / 2 s, auctions with the most bids)",
          ("auction", "window_start_ms", "window_end_ms", "num"), ("auction", "window_start_ms", "window_end_ms")),
    Query("q6", "average selling price of each seller's last 10 closed auctions",
          ("seller", "auction", "expires_ms", "avg_price"), ("seller", "auction"), flink=False),
    Query("q7", "highest bid (TUMBLE 10 s max, joined back to the bids)",
          ("auction", "price", "bidder", "date_time_ms"), ("auction", "price", "bidder", "date_time_ms")),
    Query("q8", "monitor new users (TUMBLE 10 s persons joined to sellers)",
          ("id", "name", "window_start_ms"), ("id", "name", "window_start_ms")),
    Query("q11", "user sessions (SESSION gap 10 s, bids per bidder)",
          ("bidder", "window_start_ms", "window_end_ms", "bid_count"), ("bidder", "window_start_ms", "window_end_ms")),
    Query("q12", "processing-time TUMBLE 10 s, bids per bidder (totals compared)",
          ("bidder", "bid_count"), ("bidder",), flink=False),
)}
