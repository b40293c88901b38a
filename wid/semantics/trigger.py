"""One trigger policy for every window kind (docs/semantics.md#completeness):
when a window fires, whether a firing is final, when a row is late, and
how long a window keeps its state, decided in one place for the WID
operator's shards (on NumPy arrays) and for the streaming oracle (on ints)
alike.

A kind says, of each of its windows, the closing point at which it is
complete (its *closing time*: a time window's end; a session's end plus one
microsecond, since a row exactly at the end still joins it; a rolling
row's own time plus one; `NEVER` for a window that never closes) and
whether a micro-batch *touched* it (added a row to it, or, for count
windows, a rank that became final); of a row, the closing times of the
first and the last window it falls in. With C the closing point of the
row's group before its micro-batch (`NOTHING_CLOSED` when nothing is
closed) and C' after it, and A the `allowed_lateness_ms` under
``late_data = "reopen"`` (0 otherwise):

- a window **takes rows**, and keeps its state, while ``C < closes_at + A``;
- a row is **late** (Li et al., section 5) when, ``generous``, its last
  window no longer takes rows, or, ``consistent``, its first one does not
  (a kind with one window per row has both the same);
- a window **fires** when it closes (its closing time passes into
  ``(C, C']``), when it took rows after it closed (a *late firing*, which
  only reopen allows), and, emitting ``on_update``, when it took rows while
  open; a firing is **final** once the window is closed.

This is Flink's split of a `WindowAssigner` from a `Trigger` (which returns
a decision, FIRE or CONTINUE, rather than acting) with its allowed
lateness, and Beam's `WindowingStrategy`: the kinds assign, this decides.
The checks that depend on a stream (which emit modes a kind has, whether
its rows can be late) live here too (`stream_problems`, `late_rows`):
`wid validate` runs them, a stream's compilation refuses what they find,
and `wid explain` reads its warnings from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wid.errors import ConfigError
from wid.semantics.timeunits import ms_to_us

if TYPE_CHECKING:
    from wid.spec.window import Window

# Closing points and times as int64 microseconds, far outside Spark's range (about +-2^58 microseconds), so that
# adding a lateness budget never overflows and every comparison needs no special case.
NOTHING_CLOSED = -(1 << 62)  # the closing point of a group nothing has closed yet: before every time
NEVER = 1 << 62  # the closing time of a window that never closes


def _not(x: Any) -> Any:
    """Logical not, for a bool and a NumPy bool array alike."""
    return x ^ True


@dataclass(frozen=True)
class TriggerPolicy:
    """The policy of one Window (`policy_of`): its emit mode, its reopen
    budget `allowed_us` (0 without reopen) and its late mode. Every method
    takes ints or NumPy int64 arrays (closing times and points in
    microseconds), elementwise."""

    emit: str = "on_close"
    allowed_us: int = 0
    late_mode: str = "generous"

    @property
    def on_update(self) -> bool:
        """Does an open window that took rows fire (a partial value)?"""
        return self.emit == "on_update"

    @property
    def fires_touched(self) -> bool:
        """Can a window fire for having taken rows, not only by closing (on
        update, or a late firing under reopen)? Without, no kind needs to
        know which windows a micro-batch touched."""
        return self.on_update or self.allowed_us > 0

    def takes(self, closes_at: Any, closing: Any) -> Any:
        """Does a window closing at `closes_at` still take rows (and keep its
        state) at closing point `closing`: ``closing < closes_at + A``."""
        return closing < closes_at + self.allowed_us

    def takes_after(self, closing: Any) -> Any:
        """The time a window's closing time must pass to take rows at closing
        point `closing`: ``closing - A``."""
        return closing - self.allowed_us

    def late(self, first_closes_at: Any, last_closes_at: Any, closing: Any) -> Any:
        """Is a row late whose first and last windows close at these times,
        judged against its group's closing point before its micro-batch?"""
        return _not(self.takes(self.judged(first_closes_at, last_closes_at), closing))

    def judged(self, first: Any, last: Any) -> Any:
        """Of a row's first and last windows' values, the one the late rule
        judges it by: its last window's (``generous``), its first's
        (``consistent``)."""
        return first if self.late_mode == "consistent" else last

    def fire(self, closed_before: Any, closed_after: Any, touched: Any) -> tuple[Any, Any]:
        """(does the window fire, is the firing final), from whether it was
        closed before the micro-batch, is closed after it, and took rows in
        it (module docstring). A closed window takes rows only under reopen,
        so reopen needs no rule of its own."""
        fires = (closed_after & (touched | _not(closed_before))) | (touched & _not(closed_after) & self.on_update)
        return fires, closed_after


def policy_of(w: Window) -> TriggerPolicy:
    """The trigger policy of `w`: its `emit`, its reopen budget, its `late_mode`."""
    allowed = ms_to_us(w.allowed_lateness_ms or 0) if w.late_data == "reopen" else 0
    return TriggerPolicy(w.emit, allowed, w.late_mode)


def late_rows(w: Window) -> bool:
    """Can a row of `w` be late on a stream? Not under count windows ranked
    by arrival (a rank given on arrival is final), nor for a kind whose
    windows never close (its shape's `late_rows`)."""
    return w.shape.late_rows(w)


def stream_problems(w: Window) -> list[tuple[str, str]]:
    """(field, why) for each way `w` cannot run on a stream though it can in
    batch: an emit mode its kind has not on a stream (a window that never
    closes has no final value to emit on close), reopen where no row can be
    late, its kind's own rule (ranks by order must follow the event time)."""
    shape = w.shape
    found = []
    if w.emit not in shape.stream_emits:
        found.append(("emit", f"emit = '{w.emit}' on a stream: {w.kind} windows emit "
                      f"{' or '.join(repr(e) for e in shape.stream_emits)} there (set emit = "
                      f"'{shape.stream_emits[0]}')"))
    if w.late_data == "reopen" and not late_rows(w):
        found.append(("late_data", f"late_data = 'reopen' on a stream: no row of {w.kind} windows is ever late "
                      "there, so nothing reopens (use late_data = 'drop')"))
    problem = shape.stream_problem(w)
    if problem is not None:
        found.append(problem)
    return found


def check_stream(w: Window) -> None:
    """Raise ConfigError, naming the field, for the first of
    `stream_problems` of `w` (`wid validate` on a streaming pipeline, and a
    stream's compilation)."""
    problems = stream_problems(w)
    if problems:
        raise ConfigError(*problems[0])


__all__ = ["NEVER", "NOTHING_CLOSED", "TriggerPolicy", "check_stream", "late_rows", "policy_of", "stream_problems"]
