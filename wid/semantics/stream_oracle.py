"""The streaming reference engine: micro-batches in, emissions and late rows
out, straight from docs/semantics.md#completeness. It is the oracle for wid's streaming
operator, as `wid.semantics.oracle` is for batch; it keeps every accepted row
and recomputes windows from them, favouring clarity over speed.

Per micro-batch b, with ``C(g)`` a group's closing point (the global
watermark, or its scope's keyed punctuation if later; `wid.semantics.watermark`):

1. Punctuation rows (marked by `is_punctuation`) are never aggregated; bad
   rows are rejected with a reason, as in batch, the micro-batch's timestamp
   (`MicroBatch.batch_ms`) being the processing time the `max_future_ms`
   guard measures from. A rejected row moves no watermark, and neither does a
   punctuation whose time a row would be rejected for.
2. Each good row is judged against ``C_(b-1)(g)``, what was closed before
   this batch: its kind's rules (`wid.semantics.kinds`: time windows,
   sessions, ranks, landmark periods) say which windows it falls in and
   when they close, and the window's trigger policy (`wid.semantics.trigger`:
   the paper's two modes) whether it is late and which windows it counts
   in. A late row is counted (`drop`, and `reopen` past its budget) or sent
   to the dead letter with a reason (`dlq`).
3. The watermarks advance with the batch (data rows and punctuations), one
   per source, or per Kafka partition for rows that name theirs
   (`clock_of`).
4. Emissions, judged against ``C_b(g)``: the kind's rules say which windows
   closed and which this batch touched, and the trigger policy what fires:
   a window emits (final) once the closing point passes it, and again,
   corrected, when a reopened window takes a row; with ``emit =
   "on_update"`` every window that took a row and is still open emits its
   partial value; a session emitted under a start it no longer has is
   retracted.

Every kind's rules run per closing key (`partition_by` for count windows,
else `group_by`).

The accounting identity holds per batch: ``rows_in = rows_rejected +
rows_late_dropped + rows_late_dlq + rows_aggregated`` (punctuations are not
data rows and are counted apart).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from wid.semantics import reasons
from wid.semantics.kinds import semantics_of
from wid.semantics.oracle import DeadLetter, event_time_reason, reject_reason
from wid.semantics.stream_types import (
    TS,
    Accepted,
    BatchResult,
    Emission,
    Group,
    LateRow,
    MicroBatch,
    Row,
)
from wid.semantics.timeunits import event_time_us, ms_to_us
from wid.semantics.trigger import NOTHING_CLOSED, policy_of, stream_problems
from wid.semantics.watermark import (
    SourceBatch,
    Watermarks,
    clock,
    closing_point,
    later,
    partition_id,
)
from wid.spec.pipeline import KAFKA_PARTITION, KAFKA_TOPIC
from wid.spec.window import Window


def run_stream(batches: Iterable[MicroBatch], window: Window,
               is_punctuation: Callable[[Row], bool] | None = None,
               redefined: Mapping[int, Window] | None = None) -> list[BatchResult]:
    """Run `window` over `batches`; one `BatchResult` per micro-batch.

    `is_punctuation(row)` marks punctuation rows (the Python form of the
    window's punctuation predicate). `redefined` maps a micro-batch's index
    to the window the stream runs from it on, keeping what it holds (a
    restart after a change `wid.pipelines.definition` allows: lateness,
    idleness, caps, where late rows go). Raises ValueError for a window
    without streaming semantics (`wid.semantics.trigger.stream_problems`).
    """
    problems = stream_problems(window)
    if problems:
        raise ValueError(f"{problems[0][0]}: {problems[0][1]}")
    stream = _Stream(window, is_punctuation or (lambda _: False))
    out = []
    for i, b in enumerate(batches):
        if redefined and i in redefined:
            stream.redefine(redefined[i])
        out.append(stream.step(b, i))
    return out


def clock_of(source: str, row: Row) -> str:
    """The watermark clock of a row: its Kafka partition's when it says its
    topic and partition (``_topic``, ``_partition``), else its source's."""
    if KAFKA_TOPIC in row and KAFKA_PARTITION in row:
        return clock(source, partition_id(row[KAFKA_TOPIC], row[KAFKA_PARTITION]))
    return clock(source)


class _Stream:
    def __init__(self, window: Window, is_punctuation: Callable[[Row], bool]) -> None:
        self.w = window
        self.is_punctuation = is_punctuation
        self.marks = Watermarks()
        self.keyed: dict[Group, int] = {}
        self.accepted: dict[Group, list[Accepted]] = defaultdict(list)
        self.redefine(window)

    def redefine(self, window: Window) -> None:
        """Run `window` from the next micro-batch on, keeping what the stream holds."""
        self.w = window
        self.rules = semantics_of(window).rules(window, policy_of(window))

    # -- closing points ------------------------------------------------------
    def scope_of(self, group: Group) -> Group:
        scope = self.w.punctuation.scope if self.w.punctuation else ()
        return tuple(group[self.w.closing_columns.index(c)] for c in scope)

    def closing(self, group: Group, marks: Watermarks | None = None,
                keyed: Mapping[Group, int] | None = None) -> int:
        """`group`'s closing point (`NOTHING_CLOSED` when nothing is closed)."""
        marks, keyed = marks or self.marks, self.keyed if keyed is None else keyed
        found = closing_point(marks.global_us, keyed.get(self.scope_of(group)))
        return NOTHING_CLOSED if found is None else found

    # -- one micro-batch -----------------------------------------------------
    def step(self, batch: MicroBatch, index: int) -> BatchResult:
        out = BatchResult()
        seen: dict[str, SourceBatch] = {}
        marks_before, keyed_before = self.marks, dict(self.keyed)
        keyed: dict[Group, int] = {}
        now = ms_to_us(batch.batch_ms)
        for source, row in batch.rows:
            if self.is_punctuation(row):
                out.punctuations += 1
                self._punctuate(source, row, seen, keyed, now)
                continue
            out.rows_in += 1
            reason = reject_reason(row, self.w, now, streaming=True)
            if reason is not None:
                out.rejected.append(DeadLetter(reason, row))
                continue
            ts = event_time_us(row[self.w.event_time_column or ""], self.w.event_time_unit, self.w.shape.time_zone)
            assert ts is not None  # reject_reason refused nulls
            got = seen.get(clock_of(source, row), SourceBatch())
            seen[clock_of(source, row)] = SourceBatch(later(got.max_event_us, ts), got.punctuation_us)
            self._admit(source, {**row, TS: ts}, index, out)
        lateness = ms_to_us(self.w.lateness_ms)
        self.marks = self.marks.advance(seen, batch.batch_ms, lateness, self.w.source_idleness_ms)
        for scope, p in keyed.items():
            self.keyed[scope] = max(self.keyed.get(scope, p), p)
        out.watermark_us = self.marks.global_us
        out.emitted = self._emit(index, lambda g: self.closing(g, marks_before, keyed_before))
        return out

    def _punctuate(self, source: str, row: Row, seen: dict[str, SourceBatch], keyed: dict[Group, int],
                   now: int) -> None:
        """A punctuation's time advances its scope; one that a data row would
        be rejected for (none, out of range, too far in the future) says nothing."""
        p = self.w.punctuation
        assert p is not None
        value = event_time_us(row[p.time_column or self.w.event_time_column or ""], self.w.event_time_unit,
                              self.w.shape.time_zone)
        if value is None or event_time_reason(value, self.w, now, streaming=True) is not None:
            return
        if p.scope:
            scope = tuple(row[c] for c in p.scope)
            keyed[scope] = max(keyed.get(scope, value), value)
            return
        got = seen.get(clock_of(source, row), SourceBatch())
        seen[clock_of(source, row)] = SourceBatch(got.max_event_us, later(got.punctuation_us, value))

    def _admit(self, source: str, row: dict[str, Any], index: int, out: BatchResult) -> None:
        group = tuple(row[c] for c in self.w.closing_columns)
        admitted = self.rules.admit(row[TS], self.closing(group))
        if admitted is None:
            if self.w.late_data == "dlq":
                out.late.append(LateRow(source, {k: v for k, v in row.items() if k != TS}, reasons.LATE))
            else:
                out.rows_late_dropped += 1
            return
        self.accepted[group].append(Accepted(row, index, admitted.place))

    # -- emissions -------------------------------------------------------------
    def _emit(self, index: int, before: Callable[[Group], int]) -> list[Emission]:
        out: list[Emission] = []
        for group, members in self.accepted.items():
            out += self.rules.emit(group, members, index, before(group), self.closing(group))
        return out


__all__ = ["BatchResult", "Emission", "LateRow", "MicroBatch", "run_stream"]
