"""Bytewax (0.21) as a peer engine for the window scenarios.

`bytewax_engine(q, data_dir)` runs `q` (`benchmarks.query.WindowQuery`)
over ``<data_dir>/events.parquet`` (columns k int32, ts_ms int64 epoch ms,
v float64, in non-decreasing ts_ms) as one Bytewax dataflow, in this
process (`bytewax.testing.run_main`, one worker):

- input: `ParquetSource` reads the file's record batches with pyarrow and
  emits each batch (`BATCH_ROWS` rows) as one Bytewax batch of keyed items
  ``(str(k), (ts, v))``, ``ts`` an aware UTC `datetime`. Batches are how a
  Bytewax source amortises the Rust/Python boundary; the windowing operator
  still sees every row.
- windows: `bytewax.operators.windowing.fold_window` with an `EventClock`
  (zero ``wait_for_system_duration``: no lateness) and `TumblingWindower`,
  `SlidingWindower` (``length`` = size, ``offset`` = slide) or
  `SessionWindower`. Tumbling and sliding windows are ``align_to`` the epoch
  (1970-01-01T00:00Z), so window ``i`` is ``[epoch + i*offset, epoch +
  i*offset + length)``, half-open as in `benchmarks.query`.
- bounds: each window's `WindowMetadata` (the ``meta`` stream) is joined to
  its aggregate by ``"<key>/<window id>"``.
- output: rows ``(k, window_start_ms, window_end_ms, n, s, hi)`` collected
  into a list (`TestingSink`); the warm-up returns them as a pandas frame.

Two settings make Bytewax compute exactly `benchmarks.query`'s windows:

- the clock's ``now_getter`` is a constant and ``to_system_utc`` returns
  None. Bytewax's event-clock watermark is the largest event time seen plus
  the *system* time elapsed since it was seen, so with the real clock a row
  whose event time equals an earlier row's, read a few milliseconds later,
  would be late and dropped. With a frozen system clock the watermark is
  the largest event time seen, and windows close on later rows or at the
  end of input. Any late row makes the run fail (none is expected).
- sessions: Bytewax extends a session by a row at most ``gap`` after its
  last row (``<=``), as Spark, Flink and wid do (a row exactly at the
  session's end joins it). The windower gets ``gap`` itself, which is the same rule for
  event times of microsecond resolution (Python's `datetime`). Bytewax's
  session metadata ends at the last row; the output adds ``gap_ms``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks import suite
from benchmarks.query import OUTPUT, WindowQuery

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BATCH_ROWS = 10_000


def bytewax_engine(q: WindowQuery, data_dir: Path) -> suite.Engine:
    """The ``bytewax`` engine of a scenario: `q` over
    ``<data_dir>/events.parquet``. Its measure raises `suite.Unavailable`
    when Bytewax is not installed."""
    path = data_dir / "events.parquet"
    return suite.library_engine("bytewax", "bytewax", lambda warm_up: run(q, path, warm_up))


def run(q: WindowQuery, path: Path, warm_up: bool) -> pd.DataFrame | None:
    """Run the dataflow once; every output row is built and collected.
    Returns the rows as a frame (columns `benchmarks.query.OUTPUT`) when
    `warm_up`, else None. Raises RuntimeError if any row was late."""
    from bytewax.testing import run_main

    out: list[tuple[Any, ...]] = []
    late: list[Any] = []
    run_main(dataflow(q, path, out, late))
    if late:
        raise RuntimeError(f"bytewax dropped {len(late)} late row(s): the input is not in event-time order")
    return pd.DataFrame(out, columns=list(OUTPUT)).astype({c: "int64" for c in OUTPUT[:4]}) if warm_up else None


def dataflow(q: WindowQuery, path: Path, out: list[Any], late: list[Any]) -> Any:
    """The Bytewax dataflow of `q`: result rows into `out`, late rows into `late`."""
    import bytewax.operators as op
    from bytewax.dataflow import Dataflow
    from bytewax.operators.windowing import EventClock, fold_window
    from bytewax.testing import TestingSink

    flow = Dataflow("wid_peer")
    rows = op.input("read", flow, parquet_source(path))
    clock = EventClock(ts_getter=lambda row: row[0], wait_for_system_duration=timedelta(0),
                       now_getter=lambda: EPOCH, to_system_utc=lambda _: None)
    windows = fold_window("window", rows, clock, windower(q), builder=zero, folder=add, merger=merge)
    op.output("late", windows.late, TestingSink(late))
    aggregates = op.map("by_window", windows.down, by_window)
    bounds = op.map("meta_by_window", windows.meta, by_window)
    joined = op.join("bounds", aggregates, bounds)
    end_pad = timedelta(milliseconds=q.gap_ms or 0)
    op.output("out", op.map("row", joined, lambda kv: output_row(kv[1], end_pad)), TestingSink(out))
    return flow


def windower(q: WindowQuery) -> Any:
    """Bytewax's windower for `q`, aligned to the epoch (sessions: see the
    module docstring: the gap is passed as is)."""
    from bytewax.operators.windowing import SessionWindower, SlidingWindower, TumblingWindower

    size = timedelta(milliseconds=q.size_ms)
    if q.kind == "tumbling":
        return TumblingWindower(length=size, align_to=EPOCH)
    if q.kind == "hopping":
        return SlidingWindower(length=size, offset=timedelta(milliseconds=q.slide_ms or 0), align_to=EPOCH)
    return SessionWindower(gap=timedelta(milliseconds=q.gap_ms or 0))


def zero() -> list[Any]:
    """The empty aggregate ``[n, s, hi]``."""
    return [0, 0.0, float("-inf")]


def add(acc: list[Any], row: tuple[datetime, float]) -> list[Any]:
    """`acc` with one more row ``(ts, v)`` (updated in place)."""
    v = row[1]
    acc[0] += 1
    acc[1] += v
    if v > acc[2]:
        acc[2] = v
    return acc


def merge(a: list[Any], b: list[Any]) -> list[Any]:
    """The aggregate of two merged sessions."""
    return [a[0] + b[0], a[1] + b[1], max(a[2], b[2])]


def by_window(item: tuple[str, tuple[int, Any]]) -> tuple[str, tuple[str, Any]]:
    """``(key, (window id, x))`` keyed by ``"key/window id"``, keeping the key."""
    key, (window_id, x) = item
    return f"{key}/{window_id}", (key, x)


def output_row(joined: tuple[tuple[str, list[Any]], tuple[str, Any]], end_pad: timedelta) -> tuple[Any, ...]:
    """One output row from a window's aggregate and its `WindowMetadata`;
    `end_pad` is added to the close time (a session's gap, else zero)."""
    (key, (n, s, hi)), (_, meta) = joined
    return (int(key), epoch_ms(meta.open_time), epoch_ms(meta.close_time + end_pad), n, s, hi)


def epoch_ms(t: datetime) -> int:
    """`t` (aware) in epoch milliseconds."""
    return (t - EPOCH) // timedelta(milliseconds=1)


def parquet_source(path: Path, batch_rows: int = BATCH_ROWS) -> Any:
    """A Bytewax source of the events file: one partition, one Bytewax batch
    of ``(str(k), (ts, v))`` per Parquet record batch of `batch_rows` rows;
    its resume state is the count of batches emitted."""
    from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition

    class Partition(StatefulSourcePartition[Any, int]):
        def __init__(self, resume_state: int | None) -> None:
            self.done = resume_state or 0
            self.batches = pq.ParquetFile(path).iter_batches(batch_rows, columns=["k", "ts_ms", "v"])
            for _ in range(self.done):
                next(self.batches)

        def next_batch(self) -> list[Any]:
            batch = next(self.batches)  # StopIteration ends the input
            self.done += 1
            return keyed_rows(batch)

        def snapshot(self) -> int:
            return self.done

    class Source(FixedPartitionedSource[Any, int]):
        def list_parts(self) -> list[str]:
            return [path.name]

        def build_part(self, step_id: str, for_part: str, resume_state: int | None) -> Partition:
            return Partition(resume_state)

    return Source()


def keyed_rows(batch: pa.RecordBatch) -> list[tuple[str, tuple[datetime, float]]]:
    """The rows of an events batch as Bytewax keyed items ``(str(k), (ts, v))``."""
    keys = batch.column("k").cast(pa.string()).to_pylist()
    ts = batch.column("ts_ms").cast(pa.timestamp("ms", tz="UTC")).to_pylist()
    return list(zip(keys, zip(ts, batch.column("v").to_pylist(), strict=True), strict=True))
