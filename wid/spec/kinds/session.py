"""Session windows (docs/semantics.md#window-kinds): maximal runs of a
group's rows, each next row no later than the running ``max(ts + gap)``, as
Spark's `session_window`."""

from __future__ import annotations

from typing import ClassVar

from wid.errors import ConfigError
from wid.spec.field_rules import column, positive
from wid.spec.kinds.base import Shape, shape


@shape
class SessionWindows(Shape):
    """Sessions split where a group's next row comes more than the gap after
    the running end: `gap_ms`, or `gap_column` (a per-row gap in ms, Spark's
    dynamic gap). Beam's ``Sessions``, Flink's session windows, Spark's
    ``session_window``."""

    kind: ClassVar[str] = "session"
    positional: ClassVar[tuple[str, ...]] = ("gap_ms",)
    retracts: ClassVar[bool] = True

    gap_ms: int | None = positive(doc="The session gap in milliseconds: a row more than this after the running end "
                                      "starts a new session.")
    gap_column: str | None = column(doc="A column holding a gap per row, in milliseconds, instead of `gap_ms` "
                                        "(Spark's dynamic gap).")

    def check(self) -> None:
        if (self.gap_ms is None) == (self.gap_column is None):
            raise ConfigError("gap_ms", "kind = 'session' needs exactly one of `gap_ms` or `gap_column`",
                              "set gap_ms for a fixed gap, or gap_column for a per-row gap in milliseconds")


__all__ = ["SessionWindows"]
