"""wid's streaming operator run without Spark: the shards of
`wid.kernels.operator.shard.run_batch` over `MemoryStore`s, fed one
micro-batch at a time in arrival order, as the Spark plan feeds them (the
packing of `wid.kernels.operator.packing`: per-source summary shared by all
shards, rows split by shard; only the hash to shards differs: ``k mod
shards``).

The window is hopping (`duration_ms` every `hop_ms`) over ``k`` with
``n = count(*)``, ``s = sum(v)``, ``a = avg(v)``, event time ``ts_ms``
(epoch ms). Completeness (docs/semantics.md#completeness) comes from one of:

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

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from benchmarks.disorder.streams import Punctuations, Stream, batch_of, batches
from benchmarks.local_operator import ShardedOperator, packed_rows, punctuation_rows
from wid.kernels.fields import END, START
from wid.spec.aggregation import Aggregation
from wid.spec.window import Punctuation, Window

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


@dataclass(frozen=True)
class OperatorRun:
    """What a run emitted: ``k``, ``start_ms``, ``end_ms``, ``n``, ``s``,
    ``a``, the micro-batch ``batch`` that emitted it and ``closing_ms``, the
    global watermark (epoch ms) after that micro-batch; and the count of
    rows dropped as late."""

    emitted: pd.DataFrame
    late_dropped: int


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
        part = arrival.take(np.arange(lo, hi))
        table = packed_rows(part.k, part.ts_ms, part.v, "a" if punct is None else "d", shards, batch_ms)
        if punct is not None and carried is not None:
            first, last = np.searchsorted(carried, [b, b + 1])
            table = pa.concat_tables([table, punctuation_rows(punct.p_ms[first:last], batch_ms)])
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
