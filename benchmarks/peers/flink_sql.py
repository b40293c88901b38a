"""Flink SQL text for the peer adapter (`benchmarks.peers.flink`): pure
functions, no PyFlink, so the text can be read and tested anywhere.

Sources are Flink's ``filesystem`` connector over header-less CSV. Event
time arrives as epoch milliseconds (``*_ms`` BIGINT) and becomes a
``TIMESTAMP_LTZ(3)`` rowtime with a watermark (1 ms delay for the events,
Nexmark's 4 s for Nexmark): the benchmark data is in event-time order, so
no row is late, and a bounded source ends with the MAX watermark, so every
window fires. A row behind the watermark would be dropped by Flink. The session time zone is UTC
(``table.local-time-zone``, set by the job), which aligns windows to the
epoch as wid does.

Window bounds come out of Flink's window TVFs as ``TIMESTAMP(3)`` and leave
as epoch ms BIGINT through `epoch_ms`. Flink's window TVFs (TUMBLE, HOP,
SESSION, CUMULATE) give half-open ``[window_start, window_end)`` windows;
a session ends at its last row's time plus the gap and takes in a row that
arrives exactly at that end, as Spark's ``session_window`` does, if the
session has not fired yet. With a zero delay it may have: Flink fires a
window when the watermark (the largest time seen, minus the delay, minus
1 ms) reaches ``end - 1``, so a row of another key at exactly that time,
read first, closes it (measured: 1 of 1.1M sessions split that way on the
sessions scenario). The 1 ms delay keeps it open until a later time
arrives, which makes Flink's sessions deterministic and equal to Spark's.

The Nexmark queries follow the text of ``nexmark-flink/.../queries/q*.sql``
in the Nexmark repository, over tables whose column names are snake_case
and whose times are epoch ms, and select the window bounds too (Nexmark's
sinks drop some of them) so that every engine's output can be compared.
"""

from __future__ import annotations

from collections.abc import Mapping

from benchmarks.query import WindowQuery

EVENTS = ("k INT, ts_ms BIGINT, v DOUBLE, "
          "ts AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR ts AS ts - INTERVAL '0.001' SECOND")

_NEXMARK_TIME = ("date_time AS TO_TIMESTAMP_LTZ(date_time_ms, 3), "
                 "WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND")
NEXMARK: Mapping[str, str] = {
    "person": "id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, "
              f"state STRING, date_time_ms BIGINT, extra STRING, {_NEXMARK_TIME}",
    "auction": "id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, "
               "reserve BIGINT, date_time_ms BIGINT, expires_ms BIGINT, seller BIGINT, "
               f"category BIGINT, extra STRING, {_NEXMARK_TIME}",
    "bid": "auction BIGINT, bidder BIGINT, price BIGINT, channel STRING, url STRING, "
           f"date_time_ms BIGINT, extra STRING, {_NEXMARK_TIME}",
}
"""The Nexmark tables' columns (Nexmark's ``ddl_views.sql`` in snake_case,
times as epoch ms plus the ``date_time`` rowtime), in CSV column order. The
watermark trails by 4 s, as in Nexmark's ``ddl_gen.sql``; the generated
tables are in event-time order, so it drops nothing either way."""

_MAX_INTERVAL_MS = 100 * 86_400_000


def csv_source(name: str, columns: str, path: str) -> str:
    """``CREATE TABLE name (columns)`` over the header-less CSV at `path` (a
    file or a directory of files), bounded."""
    return (f"CREATE TABLE {name} ({columns}) WITH ("
            f"'connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')")


def interval(ms: int) -> str:
    """`ms` milliseconds as a Flink SQL interval literal, e.g. 90_500 ->
    ``INTERVAL '0 00:01:30.500' DAY TO SECOND(3)`` (a plain ``SECOND``
    literal takes at most 99 seconds). Raises ValueError unless
    ``0 < ms < 100 days``."""
    if not 0 < ms < _MAX_INTERVAL_MS:
        raise ValueError(f"interval of {ms} ms: Flink SQL takes 1 ms to 99 days")
    days, rest = divmod(ms, 86_400_000)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"INTERVAL '{days} {hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}' DAY TO SECOND(3)"


def epoch_ms(timestamp: str) -> str:
    """The SQL for a ``TIMESTAMP(3)`` (read in the UTC session zone) as epoch
    ms BIGINT: whole seconds from ``UNIX_TIMESTAMP`` (which floors, so times
    before 1970 are right too) plus the millisecond field."""
    return (f"(CAST(UNIX_TIMESTAMP(CAST({timestamp} AS STRING)) AS BIGINT) * 1000"
            f" + EXTRACT(MILLISECOND FROM {timestamp}))")


def window_tvf(q: WindowQuery, table: str = "ev", time: str = "ts", key: str = "k") -> str:
    """The window TVF call that assigns `table`'s rows to `q`'s windows:
    TUMBLE(size), HOP(slide, size) or SESSION(PARTITION BY key, gap).
    Raises ValueError when `q` lacks its kind's parameter."""
    if q.kind == "tumbling":
        return f"TUMBLE(TABLE {table}, DESCRIPTOR({time}), {interval(q.size_ms)})"
    if q.kind == "hopping":
        if q.slide_ms is None:
            raise ValueError("hopping WindowQuery needs slide_ms")
        return f"HOP(TABLE {table}, DESCRIPTOR({time}), {interval(q.slide_ms)}, {interval(q.size_ms)})"
    if q.kind == "session":
        if q.gap_ms is None:
            raise ValueError("session WindowQuery needs gap_ms")
        return f"SESSION(TABLE {table} PARTITION BY {key}, DESCRIPTOR({time}), {interval(q.gap_ms)})"
    raise ValueError(f"unknown window kind {q.kind!r}")


def aggregate_sql(tvf: str) -> str:
    """The events query over the windows of `tvf`; columns
    `benchmarks.query.OUTPUT`: k, window_start_ms, window_end_ms (BIGINT
    epoch ms), n (count), s (sum of v), hi (max of v)."""
    return (f"SELECT k, {epoch_ms('window_start')} AS window_start_ms, "
            f"{epoch_ms('window_end')} AS window_end_ms, "
            "COUNT(*) AS n, SUM(v) AS s, MAX(v) AS hi "
            f"FROM TABLE({tvf}) GROUP BY k, window_start, window_end")


def window_sql(q: WindowQuery) -> str:
    """`q` over the events table ``ev`` (columns `EVENTS`); see `aggregate_sql`."""
    return aggregate_sql(window_tvf(q))


def cumulate_sql(step_ms: int, max_size_ms: int) -> str:
    """Cumulating windows over ``ev`` (Flink's CUMULATE, wid's `landmark`
    with `max_duration_ms`): windows ``[w*max, w*max + (i+1)*step)`` for
    each step i, restarting every `max_size_ms`; see `aggregate_sql`."""
    return aggregate_sql(
        f"CUMULATE(TABLE ev, DESCRIPTOR(ts), {interval(step_ms)}, {interval(max_size_ms)})")


def _hop_bids(select: str) -> str:
    return (f"SELECT {select} FROM TABLE(HOP(TABLE bid, DESCRIPTOR(date_time), "
            f"{interval(2000)}, {interval(10_000)})) GROUP BY auction, window_start, window_end")


Q5 = f"""SELECT AuctionBids.auction, {epoch_ms('AuctionBids.starttime')} AS window_start_ms,
  {epoch_ms('AuctionBids.endtime')} AS window_end_ms, AuctionBids.num
FROM ({_hop_bids('auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime')}
) AS AuctionBids
JOIN (
  SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM ({_hop_bids('COUNT(*) AS num, window_start AS starttime, window_end AS endtime')}
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
  AND AuctionBids.num >= MaxBids.maxn"""
"""Nexmark q5, hot items: per HOP window of 10 s every 2 s, the auctions
with the most bids. Columns: auction, window_start_ms, window_end_ms, num."""

Q7 = f"""SELECT B.auction, B.price, B.bidder, B.date_time_ms
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, CAST(window_end AS TIMESTAMP_LTZ(3)) AS date_time
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), {interval(10_000)}))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - {interval(10_000)} AND B1.date_time"""
"""Nexmark q7, highest bid: the bids priced at a TUMBLE 10 s window's
maximum and timed within ``[window_end - 10 s, window_end]`` (both ends
included, as Nexmark's BETWEEN). Columns: auction, price, bidder,
date_time_ms. (Nexmark's window_end is a TIMESTAMP; here the rowtime is a
TIMESTAMP_LTZ, so it is cast, in the UTC session zone.)"""

Q8 = f"""SELECT P.id, P.name, {epoch_ms('P.starttime')} AS window_start_ms
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), {interval(10_000)}))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), {interval(10_000)}))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime"""
"""Nexmark q8, monitor new users: persons who opened an auction in the
TUMBLE 10 s window they registered in. Columns: id, name, window_start_ms."""

Q11 = f"""SELECT B.bidder,
  {epoch_ms(f"SESSION_START(B.date_time, {interval(10_000)})")} AS window_start_ms,
  {epoch_ms(f"SESSION_END(B.date_time, {interval(10_000)})")} AS window_end_ms,
  COUNT(*) AS bid_count
FROM bid B
GROUP BY B.bidder, SESSION(B.date_time, {interval(10_000)})"""
"""Nexmark q11, user sessions: bids per bidder per session of gap 10 s (the
legacy group window, as Nexmark writes it). Columns: bidder,
window_start_ms, window_end_ms, bid_count."""

NEXMARK_QUERIES: Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "q5": (Q5, ("bid",), ("auction", "window_start_ms", "window_end_ms", "num")),
    "q7": (Q7, ("bid",), ("auction", "price", "bidder", "date_time_ms")),
    "q8": (Q8, ("person", "auction"), ("id", "name", "window_start_ms")),
    "q11": (Q11, ("bid",), ("bidder", "window_start_ms", "window_end_ms", "bid_count")),
}
"""Each Nexmark query: its SQL, the tables it reads, its output columns."""
