"""A window kind the tests add, as a maintainer adds one: `global`, one
window per group from the landmark on that never closes (Beam's and
Flink's GlobalWindows). On a stream its running value is emitted on
update and is never final. Its spec: the shape (`wid.spec.kinds.base.Shape`)."""

from __future__ import annotations

from typing import ClassVar

from wid.spec.field_rules import integer
from wid.spec.kinds.base import Shape, shape


@shape
class GlobalWindows(Shape):
    """One window per group, ``[landmark, no end)``: every row of the group
    from `landmark_ms` on. Beam's ``GlobalWindows``."""

    kind: ClassVar[str] = "global"
    positional: ClassVar[tuple[str, ...]] = ("landmark_ms",)
    required: ClassVar[tuple[str, ...]] = ("landmark_ms",)
    stream_emits: ClassVar[tuple[str, ...]] = ("on_update",)  # it never closes: nothing is final to emit on close

    landmark_ms: int | None = integer(doc="Where the window starts, epoch milliseconds; earlier rows go to the "
                                          "dead letter.")

    def earliest_ms(self) -> int | None:
        return self.landmark_ms

    def late_rows(self, w: object) -> bool:
        return False  # a window that never closes takes every row
