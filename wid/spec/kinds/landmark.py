"""Landmark windows (docs/semantics.md#window-kinds): ``[L, L + (w+1)*h)``,
restarting every `max_duration_ms` when given (Flink's CUMULATE)."""

from __future__ import annotations

from typing import ClassVar

from wid.errors import ConfigError
from wid.spec.calendar import OnCalendar, check_calendar, require_span
from wid.spec.field_rules import integer, positive
from wid.spec.kinds.base import Shape, shape


@shape
class LandmarkWindows(OnCalendar, Shape):
    """Landmark windows growing from `landmark_ms` L by `hop_ms` h: window w
    is ``[period start, L + (w+1)*h)``, restarting every `max_duration_ms`
    if given (either in months too, on a calendar: `wid.spec.calendar`).
    With a maximum duration these are Flink's CUMULATE windows. Windows of
    one period share their start, so the natural key names the end."""

    kind: ClassVar[str] = "landmark"
    positional: ClassVar[tuple[str, ...]] = ("hop_ms", "landmark_ms")
    required: ClassVar[tuple[str, ...]] = ("landmark_ms",)
    key_column: ClassVar[str] = "window_end_column"

    hop_ms: int | None = positive(doc="The hop h in milliseconds: how far apart consecutive windows end.")
    landmark_ms: int | None = integer(doc="The landmark L, epoch milliseconds: where landmark windows start. "
                                          "Earlier rows go to the dead letter.")
    max_duration_ms: int | None = positive(doc="Restart landmark windows every this many milliseconds (Flink's "
                                               "CUMULATE); a multiple of `hop_ms`.")
    hop_months: int | None = positive(doc="The hop in local months, instead of `hop_ms`.")
    max_duration_months: int | None = positive(doc="Landmark windows restart every this many local months "
                                                   "(`max_duration = \"1 month\"`: month to date).")

    def check(self) -> None:
        require_span(self, "hop_ms")
        check_calendar(self)
        if self.max_duration_ms is not None and self.hop_ms is not None and self.max_duration_ms % self.hop_ms:
            raise ConfigError("max_duration_ms", f"max_duration_ms = {self.max_duration_ms} is not a multiple of "
                              f"hop_ms = {self.hop_ms}", "make it an integral multiple of hop_ms, as Flink's "
                              "CUMULATE requires")

    def earliest_ms(self) -> int | None:
        return self.landmark_ms


__all__ = ["LandmarkWindows"]
