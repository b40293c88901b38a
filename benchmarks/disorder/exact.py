"""The exact hopping-window results: every window over all its rows,
whatever their arrival order (NumPy and pandas, independent of wid).

Window w of a hopping window of `duration_ms` every `hop_ms` (aligned to the
epoch, docs/semantics.md#window-kinds) is ``[w * hop, w * hop + duration)``; a row at
``ts`` is in windows ``floor((ts - duration) / hop) + 1`` to
``floor(ts / hop)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.disorder.streams import Stream

WINDOW_KEYS = ("k", "start_ms", "end_ms")


def window_ids(ts_ms: np.ndarray, duration_ms: int, hop_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """(row index, window id) for every (row, window) membership."""
    first = np.floor_divide(ts_ms - duration_ms, hop_ms) + 1
    count = np.floor_divide(ts_ms, hop_ms) - first + 1
    row = np.repeat(np.arange(len(ts_ms)), count)
    offset = np.arange(len(row)) - np.repeat(np.cumsum(count) - count, count)
    return row, np.repeat(first, count) + offset


def exact_windows(stream: Stream, duration_ms: int, hop_ms: int) -> pd.DataFrame:
    """Per (key, window): ``k`` (int64), ``start_ms``, ``end_ms`` (int64,
    epoch ms), ``n`` (rows, int64) and ``s`` (sum of v, float64), sorted
    by the keys."""
    row, w = window_ids(stream.ts_ms, duration_ms, hop_ms)
    frame = pd.DataFrame({"k": stream.k[row].astype(np.int64), "start_ms": w * hop_ms, "v": stream.v[row]})
    out = frame.groupby(["k", "start_ms"], sort=True).agg(n=("v", "size"), s=("v", "sum")).reset_index()
    out.insert(2, "end_ms", out["start_ms"] + duration_ms)
    return out
