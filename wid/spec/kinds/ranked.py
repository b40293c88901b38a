"""The kinds that rank rows: count windows (the paper's tuple-based
sliding windows) and rolling windows (slide-by-tuple), docs/semantics.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from wid.errors import ConfigError
from wid.spec.field_rules import column, columns, positive, text
from wid.spec.kinds.base import SHIFTED_RANKS, Shape, hop_within, refuse_reopen_of_ranks, shape

if TYPE_CHECKING:
    from wid.spec.window import Window


@dataclass(frozen=True, kw_only=True)
class Ranked:
    """How rows are ranked, for the kinds that rank them: a shape's mixin."""

    order_by: str | None = column(doc="The column ranks follow (default: the event time); on a stream it must be "
                                      "the event time.")
    tie_breaker: str | None = column(doc="A column that orders rows tied on `order_by`, so that ranks, `first` "
                                         "and `last` are deterministic.")
    rank_by: Literal["order", "arrival"] = text("order", "Count windows and `every_rows`: `order` ranks by "
                                                         "`order_by`; `arrival` by micro-batch, then `order_by` (the "
                                                         "paper's tuple-based windows, no row is late).")

    def ranks_rows(self) -> bool:
        """Does the window rank rows?"""
        return True

    def stream_problem(self, w: Window) -> tuple[str, str] | None:
        """Ranks by ``order`` need `order_by` to be the event time on a
        stream: only the closing point (on event time) can make a rank final."""
        if self.ranks_rows() and self.rank_by == "order" and self.order_by not in (None, w.event_time_column):
            return ("order_by", f"order_by = '{self.order_by}' on a stream: ranks are only final once the closing "
                    "point passes a row's event time, so on a stream they must follow the event time "
                    "(remove order_by, or set rank_by = 'arrival' to rank rows as they arrive)")
        return None


@shape
class CountWindows(Ranked, Shape):
    """Count windows of `size_rows` ranks every `hop_rows` (default: size):
    window w holds the 0-based ranks ``[max(0, (w+1)*hop - size),
    (w+1)*hop)`` of each `partition_by` partition. Flink's ``countWindow``."""

    kind: ClassVar[str] = "count"
    positional: ClassVar[tuple[str, ...]] = ("size_rows",)
    required: ClassVar[tuple[str, ...]] = ("size_rows",)
    numbered: ClassVar[bool] = True
    closing_field: ClassVar[str] = "partition_by"
    closing_note: ClassVar[str] = " (ranks are counted per partition)"
    key_column: ClassVar[str] = "window_id_column"

    size_rows: int | None = positive(doc="The number of rows in a count window.")
    hop_rows: int | None = positive(doc="How many rows apart count windows end (default: `size_rows`, tumbling "
                                        "count windows).")
    partition_by: tuple[str, ...] = columns("Count windows: ranks are counted separately per value of these "
                                            "columns (the paper's pattr).")

    @property
    def hop_rows_or_size(self) -> int:
        """`hop_rows`, defaulting to `size_rows`."""
        return self.hop_rows if self.hop_rows is not None else (self.size_rows or 0)

    def check(self) -> None:
        hop_within(self, "hop_rows", "size_rows")

    def check_window(self, w: Window) -> None:
        why = ("under rank_by = 'arrival' no row is ever late, so there is nothing to reopen"
               if self.rank_by == "arrival" else SHIFTED_RANKS)
        refuse_reopen_of_ranks(w, self.rank_by, why)

    def late_rows(self, w: Window) -> bool:
        return self.rank_by == "order"  # a rank given on arrival is final: nothing is ever late


@shape
class RollingWindows(Ranked, Shape):
    """One output row per input row t, over its group's rows u with
    ``t.ts - d < u.ts <= t.ts`` (`duration_ms` d; pandas'
    ``rolling(d, closed="right")``); with `every_rows` n only every n-th row
    (by rank) opens an extent."""

    kind: ClassVar[str] = "rolling"
    positional: ClassVar[tuple[str, ...]] = ("duration_ms",)
    required: ClassVar[tuple[str, ...]] = ("duration_ms",)
    row_windows: ClassVar[bool] = True

    duration_ms: int | None = positive(doc="The span before each row, in milliseconds.")
    every_rows: int | None = positive(doc="Only every n-th row (by rank) opens a rolling extent.")

    def check(self) -> None:
        if self.rank_by == "arrival" and (self.every_rows or 1) == 1:
            raise ConfigError("rank_by", "rank_by = 'arrival' only chooses which rows open an extent with "
                              "every_rows > 1", "set every_rows, or remove rank_by")

    def check_window(self, w: Window) -> None:
        if not (self.ranks_rows() and self.rank_by == "order"):
            return  # extents are by time: reopen works
        refuse_reopen_of_ranks(w, self.rank_by, SHIFTED_RANKS)
        if w.emit == "on_update":
            raise ConfigError("emit", "emit = 'on_update' with every_rows > 1 and rank_by = 'order': whether a "
                              "row opens an extent is only known once the closing point passes it, so there is "
                              "no partial value to emit", "use rank_by = 'arrival', or emit = 'on_close'")

    def ranks_rows(self) -> bool:
        return (self.every_rows or 1) > 1


__all__ = ["CountWindows", "Ranked", "RollingWindows"]
