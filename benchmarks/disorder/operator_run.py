"""wid's streaming operator run without Spark: the shards of
`wid.spark.operator.shard.run_batch` over `MemoryStore`s, fed one
micro-batch at a time in arrival order, as the Spark plan feeds them (the
packing of `wid.spark.operator.packing`: per-source summary shared by all
shards, rows split by shard; only the hash to shards differs: ``k mod
shards``).

The window is hopping (`duration_ms` every `hop_ms`) over ``k`` with
``n = count(*)``, ``s = sum(v)``, ``a = avg(v)``, event time ``ts_ms``
(epoch ms). Completeness (DESIGN.md section 5) comes from one of:

- **slack**: one source ``a`` and ``lateness_ms = slack``, so the watermark
  is ``max seen - slack``;
- **punctuation**: the data on source ``d`` with ``lateness_ms = 0`` and the
  external punctuations on source ``p`` (a declared global `Punctuation`).
  The global watermark is the minimum over sources, ``min(max seen, last
  punctuation)``, which is the last punctuation whenever it is behind the
  data, as an exact punctuation is.

with the late mode ``consistent`` or ``generous`` (rows late for a window
are dropped, and counted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from benchmarks.disorder.streams import Punctuations, Stream, batch_of, batches
from wid.spark.operator.engines import make_engine
from wid.spark.operator.packing import BATCH_MS, SHARD, read_summaries, split, summarize
from wid.spark.operator.plan import operator_spec
from wid.spark.operator.shard import MemoryStore, run_batch
from wid.spark.operator.tables import PTIME, PUNCT, SRC, TS
from wid.spark.operator.time_engine import END, START
from wid.spec.aggregation import Aggregation
from wid.spec.window import Punctuation, Window

INPUT = pa.schema([("k", pa.int32()), ("ts_ms", pa.int64()), ("v", pa.float64())])
PACKED = pa.schema([*INPUT, (TS, pa.int64()), (PTIME, pa.int64()), (SRC, pa.string()), (PUNCT, pa.bool_()),
                    (SHARD, pa.int64()), (BATCH_MS, pa.int64())])
BATCH_EVERY_MS = 1000  # micro-batch timestamps (no source idleness is declared: they only need to grow)


@dataclass(frozen=True)
class Handling:
    """How a run decides completeness: ``slack`` (`slack_ms`) or
    ``punctuation`` (one every `every_ms`, `lag_ms` late; see
    `benchmarks.disorder.streams.punctuations`), and the `late_mode`."""

    completeness: Literal["slack", "punctuation"]
    late_mode: Literal["consistent", "generous"]
    slack_ms: int = 0
    every_ms: int = 0
    lag_ms: int = 0

    @property
    def label(self) -> str:
        what = f"slack {self.slack_ms} ms" if self.completeness == "slack" else f"punct every {self.every_ms} ms"
        return f"{what}, {self.late_mode}"


def window_of(h: Handling, duration_ms: int, hop_ms: int, max_groups: int) -> Window:
    """The hopping window of the module docstring under handling `h`."""
    punct = h.completeness == "punctuation"
    return Window(kind="hopping", duration_ms=duration_ms, hop_ms=hop_ms, event_time_column="ts_ms",
                  event_time_unit="ms", group_by=("k",), late_mode=h.late_mode,
                  lateness_ms=0 if punct else h.slack_ms, max_groups_per_window=max_groups,
                  punctuation=Punctuation("is_punct") if punct else None,
                  aggregations=(Aggregation(agg="count", as_="n"), Aggregation(agg="sum", column="v", as_="s"),
                                Aggregation(agg="avg", column="v", as_="a")))


def data_table(rows: Stream, source: str, shards: int, batch_ms: int) -> pa.Table:
    """`rows` as the operator's packed input (`PACKED` columns)."""
    n = len(rows)
    return pa.table({"k": rows.k, "ts_ms": rows.ts_ms, "v": rows.v, TS: rows.ts_ms * 1000,
                     PTIME: pa.nulls(n, pa.int64()), SRC: pa.repeat(source, n), PUNCT: np.zeros(n, dtype=bool),
                     SHARD: rows.k.astype(np.int64) % shards, BATCH_MS: np.full(n, batch_ms, dtype=np.int64)},
                    schema=PACKED)


def punctuation_table(p_ms: np.ndarray, batch_ms: int) -> pa.Table:
    """Punctuation rows ``ts < p`` on source ``p`` (`PACKED` columns, shard 0)."""
    n = len(p_ms)
    nulls = {f.name: pa.nulls(n, f.type) for f in INPUT}
    return pa.table({**nulls, TS: pa.nulls(n, pa.int64()), PTIME: p_ms * 1000, SRC: pa.repeat("p", n),
                     PUNCT: np.ones(n, dtype=bool), SHARD: np.zeros(n, dtype=np.int64),
                     BATCH_MS: np.full(n, batch_ms, dtype=np.int64)}, schema=PACKED)


@dataclass(frozen=True)
class OperatorRun:
    """What a run emitted: ``k``, ``start_ms``, ``end_ms``, ``n``, ``s``,
    ``a``, the micro-batch ``batch`` that emitted it and ``closing_ms``, the
    global watermark (epoch ms) after that micro-batch; and the count of
    rows dropped as late."""

    emitted: pd.DataFrame
    late_dropped: int


class ShardedOperator:
    """The operator's shards over in-memory stores for one window."""

    def __init__(self, window: Window, shards: int) -> None:
        self.spec = operator_spec(window, pipeline="disorder", shards=shards, input_columns=tuple(INPUT.names))
        self.stores = [MemoryStore() for _ in range(shards)]
        self.late_dropped = 0

    def step(self, table: pa.Table) -> tuple[list[pa.Table], int | None]:
        """One micro-batch (`PACKED` rows): the window tables emitted and
        the global watermark after it (epoch microseconds)."""
        sources, batch_ms = read_summaries([json.dumps(summarize(table, False))])
        found, watermark = [], None
        for store, part in zip(self.stores, split(table, len(self.stores)), strict=True):
            out = run_batch(self.spec, store, make_engine(self.spec, store), part.drop_columns([BATCH_MS]),
                            sources, batch_ms)
            if out.windows is not None and out.windows.num_rows:
                found.append(out.windows)
            self.late_dropped += out.stats["late_dropped"]
            watermark = out.stats["watermark_us"]
        return found, watermark


def run_operator(arrival: Stream, punct: Punctuations | None, h: Handling, duration_ms: int, hop_ms: int,
                 batch_rows: int, shards: int = 1) -> OperatorRun:
    """Feed `arrival` in micro-batches of `batch_rows` (and, under
    punctuation handling, `punct`) through the operator."""
    if (h.completeness == "punctuation") != (punct is not None):
        raise ValueError("punctuations are given exactly when the handling is 'punctuation'")
    op = ShardedOperator(window_of(h, duration_ms, hop_ms, max_groups=1 << 30), shards)
    n, count = len(arrival), batches(len(arrival), batch_rows)
    carried = None if punct is None else batch_of(punct.after, batch_rows, count)
    frames = []
    for b in range(count):
        lo, hi, batch_ms = b * batch_rows, min(n, (b + 1) * batch_rows), b * BATCH_EVERY_MS
        table = data_table(arrival.take(np.arange(lo, hi)), "a" if punct is None else "d", shards, batch_ms)
        if punct is not None and carried is not None:
            first, last = np.searchsorted(carried, [b, b + 1])
            table = pa.concat_tables([table, punctuation_table(punct.p_ms[first:last], batch_ms)])
        found, watermark_us = op.step(table)
        frames += [emitted_frame(w, b, watermark_us) for w in found]
    columns = ["k", "start_ms", "end_ms", "n", "s", "a", "batch", "closing_ms"]
    emitted = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
    return OperatorRun(emitted, op.late_dropped)


def emitted_frame(windows: pa.Table, batch: int, watermark_us: int | None) -> pd.DataFrame:
    """A shard's emitted window rows in `OperatorRun.emitted` columns."""
    out = pd.DataFrame({"k": windows.column("k").to_numpy().astype(np.int64),
                        "start_ms": windows.column(START).to_numpy() // 1000,
                        "end_ms": windows.column(END).to_numpy() // 1000})
    for c in ("n", "s", "a"):
        out[c] = windows.column(c).to_numpy(zero_copy_only=False)
    out["batch"] = batch
    out["closing_ms"] = None if watermark_us is None else watermark_us // 1000
    return out
