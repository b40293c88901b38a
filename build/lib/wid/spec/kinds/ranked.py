"""The kinds that rank rows: count windows (the paper's tuple-based
sliding windows) and rolling windows (slide-by-tuple), docs/semantics.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wid.errors import ConfigError
from wid.spec.kinds.base import SHIFTED_RANKS, Kind, hop_within, refuse_reopen_of_ranks

if TYPE_CHECKING:
    from wid.spec.window import Window


class Count(Kind):
    """Window w holds the 0-based ranks ``[max(0, (w+1)*hop - size),
    (w+1)*hop)`` of each `partition_by` partition."""

    name = "count"
    fields = ("size_rows", "hop_rows", "partition_by", "order_by", "tie_breaker", "rank_by")
    required = ("size_rows",)
    numbered = True
    closing_field = "partition_by"
    closing_note = " (ranks are counted per partition)"
    key_column = "window_id_column"

    def check(self, w: Window) -> None:
        hop_within(w, "hop_rows", "size_rows")
        why = ("under rank_by = 'arrival' no row is ever late, so there is nothing to reopen"
               if w.rank_by == "arrival" else SHIFTED_RANKS)
        refuse_reopen_of_ranks(w, why)

    def ranks_rows(self, w: Window) -> bool:
        return True


class Rolling(Kind):
    """One output row per input row t, over its group's rows u with
    ``t.ts - d < u.ts <= t.ts``; with `every_rows` n only every n-th row
    (by rank) opens an extent."""

    name = "rolling"
    fields = ("duration_ms", "every_rows", "order_by", "tie_breaker", "rank_by")
    required = ("duration_ms",)
    row_windows = True

    def check(self, w: Window) -> None:
        if w.rank_by == "arrival" and (w.every_rows or 1) == 1:
            raise ConfigError("rank_by", "rank_by = 'arrival' only chooses which rows open an extent with "
                              "every_rows > 1", "set every_rows, or remove rank_by")
        if not (self.ranks_rows(w) and w.rank_by == "order"):
            return  # extents are by time: reopen works
        refuse_reopen_of_ranks(w, SHIFTED_RANKS)
        if w.emit == "on_update":
            raise ConfigError("emit", "emit = 'on_update' with every_rows > 1 and rank_by = 'order': whether a "
                              "row opens an extent is only known once the closing point passes it, so there is "
                              "no partial value to emit", "use rank_by = 'arrival', or emit = 'on_close'")

    def ranks_rows(self, w: Window) -> bool:
        return (w.every_rows or 1) > 1


__all__ = ["Count", "Rolling"]
