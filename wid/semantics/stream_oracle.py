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
   this batch. With ``A`` = `allowed_lateness_ms` under ``late_data =
   "reopen"`` and 0 otherwise:

   - time windows: window w (end e) still takes rows while ``C < e + A``. In
     ``generous`` mode a row counts in those of its windows that still take
     rows and is late when none does; in ``consistent`` mode it is late when
     any of its windows no longer takes rows, and counts in all otherwise
     (Li et al., section 5's two modes);
   - sessions: a row is late when ``ts + A < C``. Closed sessions end before
     C, so an accepted row can never join a session that was emitted and
     dropped: the emitted sessions are exactly the batch sessions of the
     accepted rows.

   A late row is counted (`drop`, and `reopen` past its budget) or sent to
   the dead letter with a reason (`dlq`).
3. The watermarks advance with the batch (data rows and punctuations), one
   per source, or per Kafka partition for rows that name theirs
   (`clock_of`).
4. Emissions, judged against ``C_b(g)``:

   - a time window emits (final) once ``e <= C``, if it holds any row; a
     window that takes a row after that (reopen) emits again, corrected;
   - a session emits (final) once its end is before C (``end < C``: a row
     exactly at the end would still join it), and again when a reopened
     session takes a row;
   - with ``emit = "on_update"`` every window or session that took a row and
     is still open emits its partial value (not final);
   - a session that was emitted under a start it no longer has (it merged
     with another, or took an earlier row) is retracted: its old natural key
     must be deleted from the sink.

Count, rolling and landmark windows add their own rules for steps 2 and 4,
per closing key (`partition_by` for count windows, else `group_by`):
`wid.semantics.stream_ranked` (count and rolling: ranks final behind the
closing point, or on arrival) and `wid.semantics.stream_landmark`.

The accounting identity holds per batch: ``rows_in = rows_rejected +
rows_late_dropped + rows_late_dlq + rows_aggregated`` (punctuations are not
data rows and are counted apart).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from wid.semantics import reasons
from wid.semantics.oracle import DeadLetter, event_time_reason, reject_reason, window_row
from wid.semantics.sessions import sessionize
from wid.semantics.stream_landmark import LandmarkRules
from wid.semantics.stream_ranked import CountRules, RollingRules, stream_problem
from wid.semantics.stream_types import (
    TS,
    Accepted,
    BatchResult,
    Emission,
    ExtentRules,
    Group,
    LateRow,
    MicroBatch,
    Row,
)
from wid.semantics.timeunits import event_time_us, ms_to_us
from wid.semantics.watermark import (
    SourceBatch,
    Watermarks,
    clock,
    closing_point,
    later,
    partition_id,
)
from wid.semantics.windowing import Hopping, Tumbling
from wid.spec.pipeline import KAFKA_PARTITION, KAFKA_TOPIC
from wid.spec.window import Window

STREAM_KINDS = ("tumbling", "hopping", "session", "count", "rolling", "landmark")


def run_stream(batches: Iterable[MicroBatch], window: Window,
               is_punctuation: Callable[[Row], bool] | None = None) -> list[BatchResult]:
    """Run `window` over `batches`; one `BatchResult` per micro-batch.

    `is_punctuation(row)` marks punctuation rows (the Python form of the
    window's punctuation predicate). Raises ValueError for a window without
    streaming semantics (`wid.semantics.stream_ranked.stream_problem`).
    """
    problem = stream_problem(window)
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    stream = _Stream(window, is_punctuation or (lambda _: False))
    return [stream.step(b, i) for i, b in enumerate(batches)]


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
        self.rules = _rules(window)
        self.shown: set[tuple[Group, int]] = set()
        self.allowed_us = ms_to_us(window.allowed_lateness_ms or 0) if window.late_data == "reopen" else 0

    # -- closing points ------------------------------------------------------
    def scope_of(self, group: Group) -> Group:
        scope = self.w.punctuation.scope if self.w.punctuation else ()
        return tuple(group[self.w.closing_columns.index(c)] for c in scope)

    def closing(self, group: Group, marks: Watermarks | None = None,
                keyed: Mapping[Group, int] | None = None) -> int | None:
        marks, keyed = marks or self.marks, self.keyed if keyed is None else keyed
        return closing_point(marks.global_us, keyed.get(self.scope_of(group)))

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
            reason = reject_reason(row, self.w, now)
            if reason is not None:
                out.rejected.append(DeadLetter(reason, row))
                continue
            ts = event_time_us(row[self.w.event_time_column or ""], self.w.event_time_unit)
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
        value = event_time_us(row[p.time_column or self.w.event_time_column or ""], self.w.event_time_unit)
        if value is None or event_time_reason(value, self.w, now) is not None:
            return
        if p.scope:
            scope = tuple(row[c] for c in p.scope)
            keyed[scope] = max(keyed.get(scope, value), value)
            return
        got = seen.get(clock_of(source, row), SourceBatch())
        seen[clock_of(source, row)] = SourceBatch(got.max_event_us, later(got.punctuation_us, value))

    def _admit(self, source: str, row: dict[str, Any], index: int, out: BatchResult) -> None:
        group = tuple(row[c] for c in self.w.closing_columns)
        closed = self.closing(group)
        if self.rules is not None:
            late = self.rules.is_late(row[TS], closed)
            windows: frozenset[int] | None = None if late else frozenset()
        else:
            windows = self._counted_windows(row[TS], closed)
        if windows is None:
            if self.w.late_data == "dlq":
                out.late.append(LateRow(source, {k: v for k, v in row.items() if k != TS}, reasons.LATE))
            else:
                out.rows_late_dropped += 1
            return
        first = 0 if self.rules is None else self.rules.first_window(row[TS], closed)
        self.accepted[group].append(Accepted(row, index, windows, first))

    def _counted_windows(self, ts: int, closed: int | None) -> frozenset[int] | None:
        """The time windows a row counts in (empty for sessions), or None if late."""
        if self.w.kind == "session":
            return None if closed is not None and ts + self.allowed_us < closed else frozenset()
        assigner = self._assigner()
        ids = assigner.wids(ts)
        open_ids = [w for w in ids if closed is None or closed < assigner.bounds(w)[1] + self.allowed_us]
        if not open_ids or (self.w.late_mode == "consistent" and len(open_ids) < len(ids)):
            return None
        return frozenset(open_ids)

    def _assigner(self) -> Tumbling | Hopping:
        w = self.w
        if w.kind == "tumbling":
            return Tumbling(ms_to_us(w.duration_ms or 0), ms_to_us(w.origin_ms))
        return Hopping(ms_to_us(w.duration_ms or 0), ms_to_us(w.hop_ms or 0), ms_to_us(w.origin_ms))

    # -- emissions -------------------------------------------------------------
    def _emit(self, index: int, before: Callable[[Group], int | None]) -> list[Emission]:
        out: list[Emission] = []
        for group, members in self.accepted.items():
            prev, now = before(group), self.closing(group)
            if self.rules is not None:
                out += self.rules.emit(group, members, index, prev, now)
            elif self.w.kind == "session":
                out += self._emit_sessions(group, members, index, prev, now)
            else:
                out += self._emit_windows(group, members, index, prev, now)
        return out

    def _head(self, group: Group, start: int, end: int) -> dict[str, Any]:
        w = self.w
        return {w.window_start_column: start, w.window_end_column: end, **dict(zip(w.group_by, group, strict=True))}

    def _emit_windows(self, group: Group, members: list[Accepted], index: int,
                      prev: int | None, now: int | None) -> list[Emission]:
        extents: dict[int, list[Accepted]] = defaultdict(list)
        for a in members:
            for window_id in a.windows:
                extents[window_id].append(a)
        out = []
        assigner = self._assigner()
        for window_id in sorted(extents):
            start, end = assigner.bounds(window_id)
            touched = any(a.batch == index for a in extents[window_id])
            closes = now is not None and end <= now and (prev is None or end > prev)
            closed = now is not None and end <= now
            if closes or (closed and touched) or (touched and self.w.emit == "on_update"):
                row = window_row(self.w, self._head(group, start, end), [a.row for a in extents[window_id]])
                out.append(Emission(row, final=closed))
        return out

    def _emit_sessions(self, group: Group, members: list[Accepted], index: int,
                       prev: int | None, now: int | None) -> list[Emission]:
        gap = self.w.gap_column
        times = [(a.row[TS], ms_to_us(a.row[gap] if gap else self.w.gap_ms or 0)) for a in members]
        out, starts = [], set()
        for start, end, idx in sessionize(times):
            starts.add(start)
            touched = any(members[i].batch == index for i in idx)
            closed = now is not None and end < now
            was_closed = prev is not None and end < prev
            if (closed and (touched or not was_closed)) or (touched and self.w.emit == "on_update"):
                row = window_row(self.w, self._head(group, start, end), [members[i].row for i in idx])
                out.append(Emission(row, final=closed))
                self.shown.add((group, start))
        for key in sorted(k for k in self.shown if k[0] == group and k[1] not in starts):
            self.shown.discard(key)
            out.append(Emission({**self._head(group, key[1], 0), self.w.window_end_column: None},
                               final=False, retract=True))
        return out


def _rules(w: Window) -> ExtentRules | None:
    """The rules of count, rolling and landmark windows (None for the kinds
    this module states itself)."""
    if w.kind == "count":
        return CountRules(w)
    if w.kind == "rolling":
        return RollingRules(w)
    return LandmarkRules(w) if w.kind == "landmark" else None


__all__ = ["BatchResult", "Emission", "LateRow", "MicroBatch", "STREAM_KINDS", "run_stream"]
