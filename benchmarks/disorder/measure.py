"""Latency and error of one operator run against the exact results.

Only windows ending by the *horizon* (epoch ms) are judged: every handling
compared has closed them by the end of the stream, so a window missing there
was dropped, not merely still open. For those windows:

- **error**: per window, ``|n - exact n| / exact n`` and ``|s - exact s| /
  |exact s|`` in percent (a sum within a relative 1e-9 counts as equal: sums
  in another order round differently); a window the run never emitted (all
  its rows were late) counts 100 %. Averaged over the exact windows
  (`count_err_pct`, `sum_err_pct`). `incorrect_pct` is the share of windows
  whose answer differs at all, dropped ones included.
- **latency**, averaged over the emitted windows, three ways, all free of
  wall-clock noise:
  - `latency_ms`: the arrival time (`benchmarks.disorder.streams`) of the
    emitting micro-batch's last row minus the window end: how long after
    the window's end, on the wall clock of the sources, its answer came out
    (micro-batches processed instantly). This is the paper's latency and the
    x axis of the plots; it is never negative, as no closing point passes
    the largest event time arrived;
  - `closing_latency_ms`: the closing point (watermark or punctuation) after
    that micro-batch minus the window end: how far the closing point
    overshot the end (micro-batch granularity and jumps of the largest time
    seen under slack; under exact punctuation, less than the period). It
    hides the wait for the closing point, so it is reported, not plotted;
  - `latency_rows`: how many data rows with ``ts >= window end`` had arrived
    by then (rows that arrived after the window's end before it emitted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.disorder.exact import WINDOW_KEYS
from benchmarks.disorder.operator_run import OperatorRun
from benchmarks.disorder.streams import Stream, batches


@dataclass(frozen=True)
class Arrivals:
    """Per micro-batch b of an arrival order: `clock_ms[b]`, the arrival
    time of its last row, and `after[b, j]`, how many
    arrived rows have ``ts >= first_end_ms + j * hop_ms``."""

    clock_ms: np.ndarray
    after: np.ndarray
    first_end_ms: int
    hop_ms: int

    def rows_after(self, batch: np.ndarray, end_ms: np.ndarray) -> np.ndarray:
        """For each (micro-batch, window end) pair, `after` at that point."""
        j = np.clip((end_ms - self.first_end_ms) // self.hop_ms, 0, self.after.shape[1] - 1)
        return self.after[batch, j]  # the last column counts nothing: ends past every row


def arrivals(arrival: Stream, batch_rows: int, hop_ms: int) -> Arrivals:
    """The `Arrivals` of `arrival` in micro-batches of `batch_rows` (window
    ends on the grid of `hop_ms`, as hopping windows aligned to the epoch)."""
    n, count = len(arrival), batches(len(arrival), batch_rows)
    last = np.minimum(n, (np.arange(count) + 1) * batch_rows) - 1
    clock = arrival.arrive_ms[last]
    first = int(arrival.ts_ms.min()) // hop_ms
    cell = arrival.ts_ms // hop_ms - first  # row counts for ends <= its time: ends first..first+cell
    cells = int(cell.max()) + 2
    hist = np.zeros((count, cells), dtype=np.int64)
    np.add.at(hist, (np.arange(n) // batch_rows, cell), 1)
    at_least = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # [b, j]: rows of batch b with cell >= j
    return Arrivals(clock, np.cumsum(at_least, axis=0), first * hop_ms, hop_ms)


def judge(exact: pd.DataFrame, run: OperatorRun, where: Arrivals, horizon_ms: int) -> dict[str, Any]:
    """The error and latency figures of the module docstring for `run`."""
    truth = exact[exact["end_ms"] <= horizon_ms]
    got = run.emitted[run.emitted["end_ms"] <= horizon_ms]
    if got.duplicated(list(WINDOW_KEYS)).any():
        raise RuntimeError("a window was emitted twice: on-close emission must give one answer per window")
    both = truth.merge(got, on=list(WINDOW_KEYS), how="left", suffixes=("", "_run"))
    missing = both["n_run"].isna().to_numpy()
    n_run, s_run = both["n_run"].fillna(0).to_numpy(), both["s_run"].fillna(0.0).to_numpy()
    n, s = both["n"].to_numpy(), both["s"].to_numpy()
    same_sum = np.isclose(s_run, s, rtol=1e-9, atol=0)  # sums in another order round differently
    count_err = np.where(missing, 100.0, np.abs(n_run - n) / n * 100)
    sum_err = np.where(missing, 100.0, np.where(same_sum, 0.0, np.abs(s_run - s) / np.abs(s) * 100))
    wrong = missing | (n_run != n) | ~same_sum
    batch, end = got["batch"].to_numpy(np.int64), got["end_ms"].to_numpy(np.int64)
    return {"windows": len(truth), "emitted": len(got), "late_rows": run.late_dropped,
            "latency_ms": mean(where.clock_ms[batch] - end),
            "closing_latency_ms": mean(got["closing_ms"].to_numpy(np.int64) - end),
            "latency_rows": mean(where.rows_after(batch, end)),
            "count_err_pct": mean(count_err), "sum_err_pct": mean(sum_err), "incorrect_pct": mean(wrong) * 100}


def mean(values: np.ndarray) -> float | None:
    """The mean of `values` as a float (None when empty)."""
    return float(np.mean(values)) if len(values) else None
