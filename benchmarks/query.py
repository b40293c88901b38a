"""One window query, stated once, that every engine's adapter translates.

Input rows (`benchmarks.data`): ``k`` (int32 key), ``ts_ms`` (int64 event
time, epoch milliseconds), ``v`` (float64). Output rows, the same in every
engine (the agreement check compares them): ``k``, ``window_start_ms`` and
``window_end_ms`` (int64, epoch ms), ``n`` (count of rows), ``s`` (sum of
v), ``hi`` (max of v).

Semantics are wid's (docs/semantics.md#time): windows are half-open
``[start, end)``, aligned to the epoch; a hopping window of `size_ms` every
`slide_ms` holds each row in ``size_ms / slide_ms`` windows; a session
ends at its last row's time plus `gap_ms`, and a row at or before that end
joins it (`wid.semantics.sessions`: Spark's ``session_window`` rule; Flink
merges session windows the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

KEYS = ("k", "window_start_ms", "window_end_ms")
OUTPUT = (*KEYS, "n", "s", "hi")


@dataclass(frozen=True)
class WindowQuery:
    """`kind` over ``k``: tumbling (`size_ms`), hopping (`size_ms`,
    `slide_ms`) or session (`gap_ms`); count, sum and max of ``v``."""

    kind: Literal["tumbling", "hopping", "session"]
    size_ms: int = 60_000
    slide_ms: int | None = None
    gap_ms: int | None = None

    @property
    def label(self) -> str:
        if self.kind == "session":
            return f"session gap {self.gap_ms} ms"
        if self.kind == "hopping":
            return f"hopping {self.size_ms} ms every {self.slide_ms} ms"
        return f"tumbling {self.size_ms} ms"
