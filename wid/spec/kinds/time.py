"""Time windows of a duration: tumbling and hopping
(docs/semantics.md#window-kinds), fixed or on a calendar
(`wid.spec.calendar`)."""

from __future__ import annotations

from typing import ClassVar

from wid.spec.calendar import OnCalendar, check_calendar, require_span
from wid.spec.field_rules import integer, positive
from wid.spec.kinds.base import Shape, hop_within, shape


@shape
class TumblingWindows(OnCalendar, Shape):
    """Tumbling windows: window w is ``[o + w*d, o + (w+1)*d)`` (`duration_ms`
    d, `origin_ms` o), or a calendar unit (`duration_months`, `time_zone`).
    Beam's ``FixedWindows``, Flink's tumbling windows, Spark's ``window(ts, d)``."""

    kind: ClassVar[str] = "tumbling"
    positional: ClassVar[tuple[str, ...]] = ("duration_ms",)
    in_spark_window: ClassVar[bool] = True

    duration_ms: int | None = positive(doc="The window length d in milliseconds (tumbling, hopping; for rolling, "
                                           "the span before each row).")
    duration_months: int | None = positive(doc="The window length in local months, instead of `duration_ms` "
                                               "(`duration = \"1 month\"`, `\"1 quarter\"` is 3, `\"1 year\"` 12; "
                                               "[calendar windows](../concepts/calendar.md)).")
    origin_ms: int = integer(0, "The phase o in milliseconds: windows start at `o + w*h`; 0 aligns them on the "
                                "epoch.")

    def check(self) -> None:
        require_span(self, "duration_ms")
        check_calendar(self)


@shape
class HoppingWindows(OnCalendar, Shape):
    """Hopping windows: window w is ``[o + w*h, o + w*h + d)`` (`hop_ms` h <=
    d), or calendar units of the hop, `duration` long. Beam's
    ``SlidingWindows``, Flink's sliding windows, Spark's ``window(ts, d, h)``."""

    kind: ClassVar[str] = "hopping"
    positional: ClassVar[tuple[str, ...]] = ("duration_ms", "hop_ms")
    in_spark_window: ClassVar[bool] = True

    duration_ms: int | None = positive(doc="The window length d in milliseconds.")
    hop_ms: int | None = positive(doc="The hop h in milliseconds: how far apart consecutive windows start (at "
                                      "most the duration).")
    duration_months: int | None = positive(doc="The window length in local months, instead of `duration_ms`.")
    hop_months: int | None = positive(doc="The hop in local months, instead of `hop_ms` (`hop = \"1 quarter\"`).")
    origin_ms: int = integer(0, "The phase o in milliseconds: windows start at `o + w*h`; 0 aligns them on the "
                                "epoch.")

    def check(self) -> None:
        require_span(self, "duration_ms")
        require_span(self, "hop_ms")
        hop_within(self, "hop_ms", "duration_ms")
        check_calendar(self)


__all__ = ["HoppingWindows", "TumblingWindows"]
