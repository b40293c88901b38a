"""What a pipeline run did: one report for batch and streaming runs,
windows and joins, built from per-micro-batch tallies (a batch run is one).

The accounting identity of docs/semantics.md#completeness holds in each tally and in
total: ``rows_in == rows_rejected + rows_late_dropped + rows_late_dlq +
rows_aggregated`` (for a join, rows of both sides, and ``rows_aggregated``
counts those that joined).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wid.io.paths import resolve
from wid.pipelines.rejections import Rejections, over
from wid.spark.operator.rows import shard_counts
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec


@dataclass(frozen=True)
class BatchTally:
    """One micro-batch (or a whole batch run): rows read (good plus
    rejected), good rows (the rest were rejected), late rows (of which
    `rows_late_dlq` went to the dead letter, the rest were dropped), rows
    added to windows, the watermark it ended with (epoch milliseconds;
    windows that end at or before it were emitted), how long it took, and
    the output rows the target database could not hold (in the dead
    letter), and its first rejected row (`rejected_sample`: reason and row
    JSON; a batch run has it only when it rejected more than the run's
    share, `wid.pipelines.rejections`). A stream's micro-batch also reports the window rows it emitted
    (`windows_written`: a join's output rows; those the target refused
    included) and, from the WID operator, the windows and groups it holds
    and each source's watermark."""

    batch_id: int
    rows_in: int
    rows_good: int
    rows_late: int
    rows_aggregated: int
    watermark_ms: int
    duration_ms: int = 0
    rows_late_dlq: int = 0
    windows_active: int | None = None
    state_groups: int | None = None
    source_watermarks_ms: tuple[tuple[str, int | None], ...] = ()
    rows_refused: int = 0
    windows_written: int = 0
    rejected_sample: tuple[str, str] | None = None  # the first rejected row: (reason, row JSON)

    @property
    def rows_rejected(self) -> int:
        return self.rows_in - self.rows_good

    @property
    def rows_late_dropped(self) -> int:
        return self.rows_late - self.rows_late_dlq

    @property
    def identity_holds(self) -> bool:
        return self.rows_in == self.rows_rejected + self.rows_late + self.rows_aggregated


def tally(batch_id: int, stats: Iterable[str], rejected: int = 0, duration_ms: int = 0,
          windows: int = 0) -> BatchTally:
    """The `BatchTally` of one micro-batch from the WID operator's shards'
    JSON counts (their rows rejected as bad input included;
    `wid.spark.operator.rows.shard_counts`), plus `rejected` rows counted
    apart, and the `windows` it emitted."""
    c = shard_counts(stats)
    sources = {k: None if v is None else v // 1000 for k, v in c.sources_us.items()}
    return BatchTally(batch_id, rejected + c.rejected + c.rows, c.rows, c.late_dropped + c.late_dlq, c.aggregated,
                      c.watermark_us // 1000 if c.watermark_us is not None else 0, duration_ms,
                      rows_late_dlq=c.late_dlq, windows_active=c.windows_active, state_groups=c.state_groups,
                      source_watermarks_ms=tuple(sorted(sources.items())), windows_written=windows)


@dataclass
class Report:
    """A pipeline run: where it wrote (`target`, `dead_letter`, no
    password), how its stage ran (`form`, `notes`), its tallies (one per
    micro-batch of a stream; one for a batch run), the rejected rows by
    reason (batch), the rows written to the target, the punctuations
    (never aggregated), its checkpoint (streams), how long it took, and
    whether SIGINT stopped it (`wid.pipelines.follow.follow`)."""

    pipeline: str
    target: str
    dead_letter: str
    form: str = ""
    kind: str = "window"  # or "join"
    streaming: bool = False
    notes: tuple[str, ...] = ()
    checkpoint: str | None = None
    batches: list[BatchTally] = field(default_factory=list)
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    windows_emitted: int | None = 0
    punctuations: int = 0
    elapsed_s: float = 0.0
    interrupted: bool = False

    def total(self, name: str) -> int:
        """The sum of a `BatchTally` count over the run."""
        return sum(getattr(b, name) for b in self.batches)

    @property
    def rows_in(self) -> int:
        return self.total("rows_in")

    @property
    def rows_rejected(self) -> int:
        return self.total("rows_rejected")

    @property
    def rows_aggregated(self) -> int:
        return self.total("rows_aggregated")

    @property
    def rows_late_dropped(self) -> int:
        return self.total("rows_late_dropped")

    @property
    def rows_late_dlq(self) -> int:
        return self.total("rows_late_dlq")

    @property
    def rows_refused(self) -> int:
        return self.total("rows_refused")

    @property
    def identity_holds(self) -> bool:
        """The accounting identity, in every tally."""
        return all(b.identity_holds for b in self.batches)

    def rejections(self, share: float) -> list[Rejections]:
        """The batches that rejected more than `share` of their rows as bad
        input, each with its first rejected row."""
        return [Rejections(b.batch_id if self.streaming else None, b.rows_in, b.rows_rejected, *b.rejected_sample)
                for b in self.batches if b.rejected_sample is not None and over(b.rows_in, b.rows_rejected, share)]


__all__ = ["BatchTally", "Report", "tally"]


def preview(spec: PipelineSpec | JoinPipelineSpec, rows: int = 8) -> list[dict[str, Any]]:
    """A few result rows read back from the target (SQLite) for a summary;
    none when nothing was written (a stream that found no data creates no
    table, nor even the database file)."""
    path = Path(resolve(spec.target.path or "", spec.base_dir))
    if spec.target.kind != "sqlite" or not path.exists():
        return []
    with closing(sqlite3.connect(path)) as con:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                           (spec.target.table,)).fetchall():
            return []
        con.row_factory = sqlite3.Row
        window = spec.window if isinstance(spec, PipelineSpec) else None
        order = window.window_start_column if window is not None and not window.shape.row_windows else "rowid"
        q = '"' + (spec.target.table or "").replace('"', '""') + '"'
        cur = con.execute(f'SELECT * FROM {q} ORDER BY "{order}" LIMIT ?', (rows,))
        return [dict(r) for r in cur.fetchall()]


__all__ += ["preview"]
