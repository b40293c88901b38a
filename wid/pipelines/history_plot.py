"""A picture of a stream's history (`wid.pipelines.history`), for ``wid
status --plot FILE.png``: rows in, late and rejected per micro-batch; each
source's watermark lag behind processing time (when the micro-batch ended
minus its watermark); and micro-batch durations, over the stream's life.

matplotlib draws it (``pip install 'spark-wid[plot]'``); it is imported
here only, when a picture is asked for.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wid.errors import MissingDependencyError
from wid.pipelines.history import Entry
from wid.versions import pip_install


def plot(entries: list[Entry], path: Path, title: str) -> None:
    """Draw `entries` (at least one) to the PNG `path`. Raises
    MissingDependencyError without matplotlib, ValueError without entries."""
    if not entries:
        raise ValueError("no micro-batch in the history to draw")
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependencyError("matplotlib (for wid status --plot)", pip_install("plot")) from None
    at = [datetime.fromtimestamp(e.ended_ms / 1000, UTC) for e in entries]
    fig, (rows, lag, took) = plt.subplots(3, 1, sharex=True, figsize=(10, 8), constrained_layout=True)
    fig.suptitle(title)
    rows.plot(at, [e.rows_in for e in entries], label="rows in")
    rows.plot(at, [e.rows_late_dropped + e.rows_late_dlq for e in entries], label="late")
    rows.plot(at, [e.rows_rejected for e in entries], label="rejected")
    rows.set_ylabel("rows per micro-batch")
    rows.legend(loc="upper left")
    _lags(lag, at, entries)
    took.plot(at, [e.duration_ms / 1000 for e in entries], marker=".", linestyle="-")
    took.set_ylabel("micro-batch (s)")
    took.set_xlabel("when the micro-batch ended (UTC)")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _lags(axis: Any, at: list[datetime], entries: list[Entry]) -> None:
    """Each source's watermark lag, and the global one's, in the unit that
    suits the largest (seconds, hours or days: a replay of old data lags by
    years)."""
    sources = sorted({s for e in entries for s in e.source_watermarks_ms})
    largest = max(e.ended_ms - e.watermark_ms for e in entries)
    unit, ms = next((u, ms) for u, ms in (("days", 86_400_000), ("h", 3_600_000), ("s", 1_000))
                    if largest >= 2 * ms or ms == 1_000)
    for name in sources:
        marks = [e.source_watermarks_ms.get(name) for e in entries]
        lags = [None if m is None else (e.ended_ms - m) / ms for e, m in zip(entries, marks, strict=True)]
        axis.plot(at, lags, label=name)
    axis.plot(at, [(e.ended_ms - e.watermark_ms) / ms for e in entries], label="global", linestyle="--")
    axis.ticklabel_format(axis="y", useOffset=False, style="plain")
    axis.set_ylabel(f"watermark lag ({unit})")
    axis.legend(loc="upper left")


__all__ = ["plot"]
