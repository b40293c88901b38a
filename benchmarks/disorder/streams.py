"""Out-of-order streams of ``(k, ts_ms, v)`` rows and their external
punctuations (NumPy, deterministic seeds).

**The in-order stream** (`in_order`): `rows` rows, ``k`` int32 uniform in
``[0, keys)``, ``v`` float64 uniform in ``[0, 1)``, and event times
``ts_ms`` (int64, epoch ms) drawn uniformly over ``rows / rate_per_s``
seconds from 2026-01-01T00:00Z and sorted, so about `rate_per_s` rows per
second of event time. Each row also has an arrival time ``arrive_ms``
(the wall clock when it reaches the operator, in the same ms): here its
event time; the disorders delay it, never below the event time, and keep
arrival times non-decreasing in arrival order.

**Bounded disorder** (`bounded`, parameter D ms): each row gets a delay
``u`` uniform in ``[0, D]`` and rows arrive in order of ``ts + u`` (ties in
event-time order). So a row is overtaken only by rows at most D ms older
than itself: for every arrival position j, ``ts[j] >= max(ts[:j]) - D``.
A watermark of ``max seen - D`` is therefore exact (no row arrives behind
it), and any slack below D can make rows late. A row arrives at
``ts + u``.

**Block-sorted disorder** (`block_sorted`, parameter B rows): the in-order
stream is cut into consecutive blocks of B rows (the last may be shorter);
blocks arrive in order and the rows inside each block in a uniformly random
order. The result is a permutation of the stream; a row is displaced by
fewer than B positions, and by at most the event-time span of its block.
A block arrives once complete: each row at the largest event time of its
block (a sender that buffers B rows and flushes them scrambled).

**Punctuations** (`punctuations`, every P ms, lag L ms): an external source
that knows the stream it describes. For each grid value ``p = i * P``
(epoch-aligned, from the first row's time rounded down to the last's rounded
up) it sends "no more rows with ``ts < p``" as soon as that is true of the
rest of the stream *plus L ms*: at the first arrival position ``a`` where
every row from ``a`` on has ``ts >= p + L`` (the suffix minimum). With
L = 0 (the default) the punctuation is exact and as early as possible, the
paper's ideal punctuating source; L > 0 models a source that is late with
its assertions. Either way a punctuation is never wrong.

**Micro-batches** (`batch_of`): M consecutive data rows in arrival order
per micro-batch; a punctuation sent after data position ``a`` travels with
the micro-batch of row ``a - 1`` (the first micro-batch when ``a = 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.data import EPOCH_2026_MS


@dataclass(frozen=True)
class Stream:
    """Rows in arrival order: ``k`` int32, ``ts_ms`` int64 (epoch ms),
    ``v`` float64 and ``arrive_ms`` int64 (epoch ms, non-decreasing, at
    least ``ts_ms``), all of one length."""

    k: np.ndarray
    ts_ms: np.ndarray
    v: np.ndarray
    arrive_ms: np.ndarray

    def __len__(self) -> int:
        return len(self.ts_ms)

    def take(self, order: np.ndarray, arrive_ms: np.ndarray | None = None) -> Stream:
        """The rows in the order of the indices `order`, arriving at
        `arrive_ms` (given in the new order; default: as they did)."""
        arrive = self.arrive_ms[order] if arrive_ms is None else arrive_ms
        return Stream(self.k[order], self.ts_ms[order], self.v[order], arrive)


@dataclass(frozen=True)
class Punctuations:
    """Punctuations ``p_ms`` (int64, epoch ms, non-decreasing), each sent
    after the first ``after`` (int64) data rows of the arrival order."""

    p_ms: np.ndarray
    after: np.ndarray


def in_order(rows: int, keys: int, rate_per_s: int, seed: int) -> Stream:
    """The in-order stream of the module docstring."""
    rng = np.random.default_rng(seed)
    span_ms = max(1, rows * 1000 // rate_per_s)
    ts = EPOCH_2026_MS + np.sort(rng.integers(0, span_ms, rows, dtype=np.int64))
    return Stream(rng.integers(0, keys, rows, dtype=np.int32), ts, rng.random(rows), ts.copy())


def bounded(stream: Stream, disorder_ms: int, seed: int) -> Stream:
    """`stream` (in event-time order) delayed by up to `disorder_ms` per row."""
    arrive = stream.ts_ms + np.random.default_rng(seed).integers(0, disorder_ms + 1, len(stream), dtype=np.int64)
    order = np.argsort(arrive, kind="stable")
    return stream.take(order, arrive[order])


def block_sorted(stream: Stream, block_rows: int, seed: int) -> Stream:
    """`stream` (in event-time order) shuffled inside blocks of `block_rows`."""
    if block_rows < 1:
        raise ValueError(f"block_rows must be at least 1, got {block_rows}")
    block = np.arange(len(stream)) // block_rows
    shuffle = np.random.default_rng(seed).random(len(stream))
    flushed = np.maximum.reduceat(stream.ts_ms, np.arange(0, len(stream), block_rows))
    order = np.lexsort((shuffle, block))
    return stream.take(order, flushed[block])


def suffix_min(ts_ms: np.ndarray) -> np.ndarray:
    """``out[a] = min(ts_ms[a:])`` for a in ``[0, n]`` (``out[n]`` is the
    int64 maximum: nothing is left to arrive)."""
    out = np.full(len(ts_ms) + 1, np.iinfo(np.int64).max, dtype=np.int64)
    out[:-1] = np.minimum.accumulate(ts_ms[::-1])[::-1]
    return out


def punctuations(arrival: Stream, every_ms: int, lag_ms: int = 0) -> Punctuations:
    """The external punctuations of the module docstring over `arrival`."""
    if every_ms < 1 or lag_ms < 0:
        raise ValueError(f"every_ms must be >= 1 and lag_ms >= 0, got {every_ms} and {lag_ms}")
    ts = arrival.ts_ms
    first, last = int(ts.min()) // every_ms, -(-int(ts.max()) // every_ms)
    p = np.arange(first, last + 1, dtype=np.int64) * every_ms
    after = np.searchsorted(suffix_min(ts), p + lag_ms, side="left")
    return Punctuations(p, after.astype(np.int64))


def batch_of(after: np.ndarray, batch_rows: int, batches: int) -> np.ndarray:
    """The micro-batch (of `batches`, `batch_rows` data rows each) that
    carries a punctuation sent after `after` data rows."""
    return np.clip((after - 1) // batch_rows, 0, batches - 1)


def batches(rows: int, batch_rows: int) -> int:
    """How many micro-batches of `batch_rows` hold `rows` rows."""
    return max(1, -(-rows // batch_rows))


__all__ = ["Punctuations", "Stream", "batch_of", "batches", "block_sorted", "bounded", "in_order", "punctuations",
           "suffix_min"]
