"""Time windows of a fixed duration: tumbling and hopping
(docs/semantics.md#window-kinds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wid.spec.kinds.base import Kind, hop_within

if TYPE_CHECKING:
    from wid.spec.window import Window


class Tumbling(Kind):
    """Window w is ``[o + w*d, o + (w+1)*d)`` (`duration_ms` d, `origin_ms` o)."""

    name = "tumbling"
    fields = ("duration_ms", "origin_ms")
    required = ("duration_ms",)


class Hopping(Kind):
    """Window w is ``[o + w*h, o + w*h + d)`` (`hop_ms` h <= d)."""

    name = "hopping"
    fields = ("duration_ms", "hop_ms", "origin_ms")
    required = ("duration_ms", "hop_ms")

    def check(self, w: Window) -> None:
        hop_within(w, "hop_ms", "duration_ms")


__all__ = ["Hopping", "Tumbling"]
