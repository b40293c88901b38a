"""Session windows (docs/semantics.md#window-kinds): maximal runs of a
group's rows, each next row no later than the running ``max(ts + gap)``, as
Spark's `session_window`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wid.errors import ConfigError
from wid.spec.kinds.base import Kind
from wid.spec.names import check_name

if TYPE_CHECKING:
    from wid.spec.window import Window


class Session(Kind):
    """`gap_ms`, or `gap_column` (a per-row gap in ms, Spark's dynamic gap)."""

    name = "session"
    fields = ("gap_ms", "gap_column")
    retracts = True

    def check(self, w: Window) -> None:
        if (w.gap_ms is None) == (w.gap_column is None):
            raise ConfigError("gap_ms", "kind = 'session' needs exactly one of `gap_ms` or `gap_column`",
                              "set gap_ms for a fixed gap, or gap_column for a per-row gap in milliseconds")
        if w.gap_column is not None:
            check_name("gap_column", w.gap_column)


__all__ = ["Session"]
