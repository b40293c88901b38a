"""`Kind`: what a window kind asks of a `wid.spec.window.Window`, declared
once (docs/architecture.md#window-kinds): the fields it takes, its rules,
and the shape of its output and completeness. The engines' parts of a kind
(its geometry and oracle in `wid.semantics.kinds`, its operator engine in
`wid.kernels.operator.engines`, its plans in `wid.spark.kinds`) are looked
up by its `name` in their own layers' registries.

A kind is a class with class-level facts and methods that read the window;
the registry (`wid.spec.kinds.KINDS`) holds one instance each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from wid.errors import ConfigError

if TYPE_CHECKING:
    from wid.spec.window import Window


class Kind:
    """A window kind (the WID paper's window-semantics framework, Li et al.,
    SIGMOD 2005, section 3): its own `Window` fields (`fields`, of which
    `required` must be set), and what generic code asks of it."""

    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()
    #: one output row per input row (rolling): no window bounds, no group cap
    row_windows: ClassVar[bool] = False
    #: its windows are numbered in the output (`Window.window_id_column`: count windows)
    numbered: ClassVar[bool] = False
    #: a window may change its identity on a stream (sessions merge, or take an earlier start), so keyed
    #: sinks delete its old natural key
    retracts: ClassVar[bool] = False
    #: the field whose columns a closing point (watermark or keyed punctuation) applies per, and why
    closing_field: ClassVar[str] = "group_by"
    closing_note: ClassVar[str] = ""
    #: the output column naming a window in its natural key, as the name of a `Window` field
    key_column: ClassVar[str] = "window_start_column"

    def check(self, w: Window) -> None:
        """Raise ConfigError, naming the field, for a setting this kind refuses."""

    def ranks_rows(self, w: Window) -> bool:
        """Does `w` rank rows (a count window, or every n-th row of a rolling one)?"""
        return False

    def earliest_ms(self, w: Window) -> int | None:
        """The earliest event time `w` windows (epoch ms; an earlier row is bad
        input, "event time before landmark_ms"), or None."""
        return None

    def output_prefix(self, w: Window) -> tuple[str, ...]:
        """The window columns before the group columns in the output."""
        if self.row_windows:
            return ()
        label = (w.window_label_column,) if w.window_label_column is not None else ()
        return (w.window_start_column, w.window_end_column, *label, *((w.window_id_column,) if self.numbered else ()))

    def closing_columns(self, w: Window) -> tuple[str, ...]:
        """The columns a closing point applies per (`closing_field`'s)."""
        columns: tuple[str, ...] = getattr(w, self.closing_field)
        return columns

    def natural_key(self, w: Window, output_columns: Sequence[str], values: Sequence[str]) -> list[str]:
        """The output columns identifying a row, for idempotent upserts: the
        window's `key_column` and the key columns; a row window's every
        output column but the aggregate `values`."""
        if self.row_windows:
            return [c for c in output_columns if c not in values]
        return [getattr(w, self.key_column), *w.key_columns]


def hop_within(w: Window, hop: str, length: str) -> None:
    """A hop longer than the window leaves rows in no window (Bytewax's rule)."""
    h, d = getattr(w, hop), getattr(w, length)
    if h is not None and d is not None and h > d:
        raise ConfigError(hop, f"{hop} = {h} is longer than {length} = {d}; there would be gaps "
                          "between windows where rows belong to no window", f"make {hop} <= {length}")


def refuse_reopen_of_ranks(w: Window, why: str) -> None:
    """Late rows cannot reopen what ranks decide: a late row would take a
    rank before rows already emitted and shift every later rank."""
    if w.late_data == "reopen":
        raise ConfigError("late_data", f"late_data = 'reopen' is not defined for {w.kind} windows ranked by "
                          f"{w.rank_by}: {why}", "use late_data = 'dlq' to keep late rows, or 'drop'")


SHIFTED_RANKS = ("a late row would take a rank before rows already emitted and shift every later rank, "
                 "so every window after it would change, not only the one it falls in")

__all__ = ["Kind", "SHIFTED_RANKS", "hop_within", "refuse_reopen_of_ranks"]
