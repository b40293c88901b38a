"""The columns and fields every engine of the WID operator shares.

- the window columns of the operator's output rows (`START`, `END`,
  `FINAL`);
- where aggregation i keeps its partial field ``name`` in a state table
  (`field`, `fields_of`), and how the fields become output values
  (`finish_all`);
- the cap message every engine raises (docs/semantics.md#completeness).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from wid.kernels.vector_aggregates import CapError
from wid.semantics.timeunits import format_us

if TYPE_CHECKING:
    from wid.kernels.operator.layout import OperatorSpec

START, END, FINAL = "_wid_start", "_wid_end", "_wid_final"


def field(i: int, name: str) -> str:
    """The column of field `name` of aggregation i in a pane table."""
    return f"_{i}_{name}"


def iso_utc(us: int) -> str:
    """Epoch microseconds as ``YYYY-MM-DDTHH:MM:SSZ`` (cap messages)."""
    return format_us(us)[:19] + "Z"


def window_text(start_us: int, end_us: int | None) -> str:
    """Window ``[start, end)`` in UTC (``no end`` for a window that never ends)."""
    return f"[{iso_utc(start_us)}, {'no end' if end_us is None else iso_utc(end_us)})"


def cap_message(spec: OperatorSpec, start_us: int, end_us: int | None) -> str:
    """docs/semantics.md#completeness's cap message for window ``[start, end)``."""
    return (f"window state cap hit: max_groups_per_window={spec.max_groups} reached on window "
            f"{window_text(start_us, end_us)} for pipeline {spec.pipeline}")


def fields_of(table: pa.Table, i: int) -> dict[str, pa.Array]:
    """Aggregation i's partial fields in `table`, by field name."""
    prefix = f"_{i}_"
    return {c[len(prefix):]: table.column(c).combine_chunks() for c in table.column_names if c.startswith(prefix)}


def finish_all(spec: OperatorSpec, table: pa.Table, start_us: np.ndarray,
               end_us: np.ndarray | None) -> dict[str, pa.Array]:
    """Every aggregation's output column over merged `table` (one row per
    window, bounds `start_us`/`end_us`, `end_us` None for windows that
    never end); a cap hit names the window."""
    out = {}
    for i, (agg, alias) in enumerate(zip(spec.aggs, spec.aliases, strict=True)):
        try:
            out[alias] = agg.finish(fields_of(table, i))
        except CapError as err:
            at = err.index
            end = None if end_us is None else int(end_us[at])
            raise CapError(f"{err} in window {window_text(int(start_us[at]), end)} "
                           f"for pipeline {spec.pipeline}") from None
    return out


__all__ = ["END", "FINAL", "START", "cap_message", "field", "fields_of", "finish_all", "iso_utc", "window_text"]
