"""A stream's history beside its checkpoint (`wid.pipelines.history`): a
line per micro-batch, a replayed micro-batch's last line standing, a line
cut short by a kill skipped; and its picture (`wid.pipelines.history_plot`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wid.pipelines import history
from wid.pipelines.history_plot import plot
from wid.pipelines.report import BatchTally


def tally(batch: int, rows: int, watermark_ms: int) -> BatchTally:
    return BatchTally(batch, rows, rows - 1, 1, rows - 2, watermark_ms, duration_ms=900 + batch,
                      source_watermarks_ms=(("a", watermark_ms), ("b", watermark_ms + 5_000)))


def test_a_replayed_micro_batch_and_a_cut_line(tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "ck")
    assert history.read(checkpoint) == []
    history.append(checkpoint, tally(0, 10, 1_000))
    history.append(checkpoint, tally(1, 20, 2_000))
    history.append(checkpoint, tally(1, 21, 2_000))  # replayed after a crash, with its own count
    with (tmp_path / "ck" / history.FILE).open("a") as out:
        out.write('{"batch_id": 2, "rows_in"')  # a kill in the middle of a line
    got = history.read(checkpoint)
    assert [(e.batch_id, e.rows_in, e.rows_rejected, e.rows_late_dlq + e.rows_late_dropped) for e in got] == [
        (0, 10, 1, 1), (1, 21, 1, 1)]
    assert got[1].source_watermarks_ms == {"a": 2_000, "b": 7_000}
    assert history.read("s3a://bucket/ck") == []  # another file system: nothing kept


def test_the_picture_is_drawn(tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "ck")
    for i in range(5):
        history.append(checkpoint, tally(i, 10 * (i + 1), 1_000 * i))
    png = tmp_path / "stream.png"
    plot(history.read(checkpoint), png, "pipeline p")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    with pytest.raises(ValueError, match="no micro-batch"):
        plot([], png, "p")
