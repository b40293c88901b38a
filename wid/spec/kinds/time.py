"""Time windows of a duration: tumbling and hopping
(docs/semantics.md#window-kinds), fixed or on a calendar
(`wid.spec.calendar`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wid.spec.calendar import CALENDAR_FIELDS, check_calendar, require_span
from wid.spec.kinds.base import Kind, hop_within

if TYPE_CHECKING:
    from wid.spec.window import Window


class Tumbling(Kind):
    """Window w is ``[o + w*d, o + (w+1)*d)`` (`duration_ms` d, `origin_ms`
    o), or a calendar unit (`duration_months`, `time_zone`)."""

    name = "tumbling"
    fields = ("duration_ms", "duration_months", "origin_ms", *CALENDAR_FIELDS)

    def check(self, w: Window) -> None:
        require_span(w, "duration_ms")
        check_calendar(w)


class Hopping(Kind):
    """Window w is ``[o + w*h, o + w*h + d)`` (`hop_ms` h <= d), or calendar
    units of the hop, `duration` long."""

    name = "hopping"
    fields = ("duration_ms", "hop_ms", "duration_months", "hop_months", "origin_ms", *CALENDAR_FIELDS)

    def check(self, w: Window) -> None:
        require_span(w, "duration_ms")
        require_span(w, "hop_ms")
        hop_within(w, "hop_ms", "duration_ms")
        check_calendar(w)


__all__ = ["Hopping", "Tumbling"]
