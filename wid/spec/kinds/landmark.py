"""Landmark windows (docs/semantics.md#window-kinds): ``[L, L + (w+1)*h)``,
restarting every `max_duration_ms` when given (Flink's CUMULATE)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wid.errors import ConfigError
from wid.spec.calendar import CALENDAR_FIELDS, check_calendar, require_span
from wid.spec.kinds.base import Kind

if TYPE_CHECKING:
    from wid.spec.window import Window


class Landmark(Kind):
    """`hop_ms` h, `landmark_ms` L (epoch ms), optional `max_duration_ms`
    (either in months too, on a calendar: `wid.spec.calendar`). Windows of
    one period share their start, so the natural key names the end."""

    name = "landmark"
    fields = ("hop_ms", "landmark_ms", "max_duration_ms", "hop_months", "max_duration_months", *CALENDAR_FIELDS)
    required = ("landmark_ms",)
    key_column = "window_end_column"

    def check(self, w: Window) -> None:
        require_span(w, "hop_ms")
        check_calendar(w)
        if w.max_duration_ms is not None and w.hop_ms is not None and w.max_duration_ms % w.hop_ms:
            raise ConfigError("max_duration_ms", f"max_duration_ms = {w.max_duration_ms} is not a multiple of "
                              f"hop_ms = {w.hop_ms}", "make it an integral multiple of hop_ms, as Flink's CUMULATE "
                              "requires")

    def earliest_ms(self, w: Window) -> int | None:
        return w.landmark_ms


__all__ = ["Landmark"]
