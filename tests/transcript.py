"""Transcripts in the style of Beam's trigger transcripts: small TOML files
under ``tests/transcripts/`` giving micro-batches (rows, batch timestamps,
punctuations, idle periods) and, per batch, the exact expected watermark,
emissions and late rows, worked out by hand in the file (its comments draw
the windows). Any streaming engine is checked against them through
`Transcript.check`.

File layout: ``[window]`` is a window table as in a pipeline's
``[transform.window]``; each ``[[batch]]`` has ``rows`` (a row's
``_source`` names its source, default ``"a"``; ``punct = true`` marks a
punctuation, the window's predicate being the column ``punct``), optional
``at_ms`` (the batch timestamp), and the expected ``watermark_ms``, ``emit``
(``start``/``end`` in ms, group columns, aggregates, ``final`` default true,
``retract``; a count window adds ``window_id``; a rolling row is its input
columns and aggregates, no bounds), ``late`` (rows sent to the dead letter)
and ``late_dropped``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wid.semantics.stream_oracle import BatchResult, Emission, MicroBatch
from wid.spec.toml_io import window_from_table
from wid.spec.window import Window

HERE = Path(__file__).parent / "transcripts"


def is_punctuation(row: Any) -> bool:
    """The Python form of the transcripts' punctuation predicate (``punct``)."""
    return row.get("punct") is True


@dataclass(frozen=True)
class Transcript:
    name: str
    window: Window
    batches: list[MicroBatch]
    expected: list[dict[str, Any]]

    def check(self, got: list[BatchResult]) -> None:
        """Assert that `got` (one result per batch) is the transcript, batch by batch."""
        assert len(got) == len(self.batches), self.name
        w = self.window
        for i, (result, want) in enumerate(zip(got, self.expected, strict=True)):
            where = f"{self.name}, batch {i + 1}"
            wm = want.get("watermark_ms")
            assert result.watermark_us == (None if wm is None else wm * 1000), where
            assert sorted(map(_canonical, (_emission(w, e) for e in want.get("emit", [])))) == sorted(
                map(_canonical, result.emitted)), where
            late = sorted(sorted(r.items()) for r in want.get("late", []))
            assert sorted(sorted((k, v) for k, v in r.row.items() if v is not None) for r in result.late) == late, where
            assert result.rows_late_dropped == want.get("late_dropped", 0), where
            rows = [r for _, r in self.batches[i].rows if not is_punctuation(r)]
            assert result.rows_in == len(rows), where
            assert result.rows_in == (result.rows_rejected + result.rows_late_dropped + result.rows_late_dlq
                                      + result.rows_aggregated), where


def _emission(w: Window, e: dict[str, Any]) -> Emission:
    e = dict(e)
    final, retract = e.pop("final", True), e.pop("retract", False)
    if w.shape.row_windows:  # a rolling row is its input row and the aggregates
        return Emission(e, final=final)
    start, end = e.pop("start") * 1000, e.pop("end", None)
    row = {w.window_start_column: start, w.window_end_column: None if end is None else end * 1000, **e}
    return Emission(row, final=final and not retract, retract=retract)


def _canonical(e: Emission) -> tuple[Any, ...]:
    return (e.retract, e.final, tuple(sorted((k, repr(v)) for k, v in e.row.items())))


def load(path: Path) -> Transcript:
    doc = tomllib.loads(path.read_text())
    window = window_from_table(doc["window"], "window")
    batches, expected = [], []
    for b in doc["batch"]:
        rows = [(r.pop("_source", "a"), r) for r in (dict(r) for r in b["rows"])]
        batches.append(MicroBatch(rows, b.get("at_ms", 0)))
        expected.append(b)
    return Transcript(path.stem, window, batches, expected)


def all_transcripts() -> list[Transcript]:
    return [load(p) for p in sorted(HERE.glob("*.toml"))]


def schema_of(transcript: Transcript) -> Any:
    """The pyarrow schema of a transcript's rows (every column any row has)."""
    import pyarrow as pa

    rows = [r for b in transcript.batches for _, r in b.rows]
    names = sorted({k for r in rows for k in r})
    return pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows]).schema
