"""Pathway (0.33) as a peer engine for the window scenarios.

`pathway_engine(q, data_dir)` runs `q` (`benchmarks.query.WindowQuery`)
over ``<data_dir>/events.parquet`` (columns k int32, ts_ms int64 epoch ms,
v float64, in non-decreasing ts_ms) as one Pathway computation, in this
process (`pw.run`; one worker thread unless ``PATHWAY_THREADS`` says
otherwise), **streaming**:

- input: `pw.io.python.read` of a `ConnectorSubject` that reads the file's
  record batches with pyarrow and commits each batch (`BATCH_ROWS` rows) as
  one Pathway mini-batch. Pathway's own CSV reader needs a header row, which
  the suite's CSV copy lacks; `pw.debug.table_from_pandas` (static) was
  slower (it fingerprints every row in Python).
- windows: ``table.windowby(ts_ms, window=..., instance=k)`` with
  `pw.temporal.tumbling` (``duration`` = size), `pw.temporal.sliding`
  (``hop`` = slide, ``duration`` = size) or `pw.temporal.session`
  (``max_gap``), reduced to count, sum and max of v. Tumbling and sliding
  windows take ``pw.temporal.common_behavior(cutoff=0)``: zero allowed
  lateness (a window's state is dropped once the largest event time seen
  reaches its end); nothing is late as the input is in order. Pathway's
  session windows ignore any behavior: their state is never dropped.
- output: `pw.io.subscribe` applies every insertion and retraction of the
  result to a dict, so each run builds every final row; the warm-up returns
  them as a pandas frame (columns `benchmarks.query.OUTPUT`).

Streaming mini-batches give the same final result as one static batch; the
result is updated, with retractions, as batches arrive.

Time type and window bounds: event time is the int64 ``ts_ms`` column
itself, so window bounds are int64 epoch ms. For int times Pathway's default
``origin`` is 0, i.e. the epoch, and windows are ``[start, start +
duration)`` with ``start`` floored (also below 0). No origin is passed: an
explicit ``origin`` also *drops* every window that starts before it. (With
`DateTimeUtc` times the default origin is 1973-01-01, a Monday, so e.g.
7-day windows would not be epoch-aligned.)

Sessions: Pathway joins adjacent rows of a key when ``next - prev <
max_gap``; Spark, Flink and wid join them when ``next - prev <= gap`` (a
row exactly at the session's end joins it), so with integer ms times the
adapter passes ``max_gap = gap_ms + 1``. Its ``_pw_window_end`` is
the session's *last row's time*, not last row + gap, so the output adds
``gap_ms``. Pathway finds sessions with `pw.iterate` (connected components
over sorted rows), which is much slower than its tumbling and sliding
windows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from benchmarks import suite
from benchmarks.query import OUTPUT, WindowQuery

BATCH_ROWS = 65_536


def pathway_engine(q: WindowQuery, data_dir: Path) -> suite.Engine:
    """The ``pathway`` engine of a scenario: `q` over
    ``<data_dir>/events.parquet``. Its measure raises `suite.Unavailable`
    when Pathway is not installed."""
    path = data_dir / "events.parquet"
    return suite.library_engine("pathway", "pathway", lambda warm_up: run(q, path, warm_up))


def run(q: WindowQuery, path: Path, warm_up: bool) -> pd.DataFrame | None:
    """Build Pathway's graph for `q` afresh and run it to the end of the
    file. Returns the final rows as a frame when `warm_up`, else None."""
    import pathway as pw
    from pathway.internals.parse_graph import G

    G.clear()  # pw.run runs every sink declared so far: forget the previous run's
    rows: dict[Any, dict[str, Any]] = {}

    def on_change(key: Any, row: dict[str, Any], time: int, is_addition: bool) -> None:
        if is_addition:
            rows[key] = row
        elif rows.get(key) == row:
            del rows[key]

    pw.io.subscribe(windows(q, events(path)), on_change)
    pw.run(monitoring_level=pw.MonitoringLevel.NONE, default_logging=False)  # no INFO line per minibatch
    if not warm_up:
        return None
    return pd.DataFrame(list(rows.values()), columns=list(OUTPUT)).astype({c: "int64" for c in OUTPUT[:4]})


def events(path: Path) -> Any:
    """The events file as a streaming Pathway table (k, ts_ms, v), one
    commit per Parquet record batch of `BATCH_ROWS` rows."""
    import pathway as pw

    class Events(pw.Schema):
        k: int
        ts_ms: int
        v: float

    class Reader(pw.io.python.ConnectorSubject):
        def run(self) -> None:
            for batch in pq.ParquetFile(path).iter_batches(BATCH_ROWS, columns=["k", "ts_ms", "v"]):
                c = batch.to_pydict()
                for k, ts_ms, v in zip(c["k"], c["ts_ms"], c["v"], strict=True):
                    self.next(k=k, ts_ms=ts_ms, v=v)
                self.commit()

    return pw.io.python.read(Reader(), schema=Events, autocommit_duration_ms=None)


def windows(q: WindowQuery, events: Any) -> Any:
    """`q` over the Pathway table `events`: columns `benchmarks.query.OUTPUT`."""
    import pathway as pw

    if q.kind == "session":
        window, behavior, end_pad = pw.temporal.session(max_gap=(q.gap_ms or 0) + 1), None, q.gap_ms or 0
    else:
        window = pw.temporal.tumbling(duration=q.size_ms) if q.kind == "tumbling" else \
            pw.temporal.sliding(hop=q.slide_ms, duration=q.size_ms)
        behavior, end_pad = pw.temporal.common_behavior(cutoff=0), 0
    return events.windowby(events.ts_ms, window=window, behavior=behavior, instance=events.k).reduce(
        k=pw.this._pw_instance, window_start_ms=pw.this._pw_window_start,
        window_end_ms=pw.this._pw_window_end + end_pad, n=pw.reducers.count(),
        s=pw.reducers.sum(pw.this.v), hi=pw.reducers.max(pw.this.v))
