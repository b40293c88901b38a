"""What a shard's state holds, as windows: for ``wid status``
(`wid.pipelines.status`), which decodes a checkpoint's state with the
engines' own code, read only, while the stream runs or after it stopped.

Each engine's `open_windows` gives one row per window its state holds
(partials of a window not yet emitted, or kept for a reopen; for count and
rolling windows, the extent in progress of each group: the rows or
partials waiting), with the window's bounds in epoch microseconds (`END`
NULL where a window has no end yet) and how many groups it holds
(`GROUPS`). Runs on the driver, over a state read through Spark's state
data source; nothing here is on a micro-batch's path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from wid.kernels.fields import END, START

GROUPS = "_wid_groups"
SCHEMA = pa.schema([(START, pa.int64()), (END, pa.int64()), (GROUPS, pa.int64())])
_ONE = "_wid_one"  # the one group of a window without group columns


def windows_held(starts: np.ndarray, ends: np.ndarray | None, groups: pa.Table) -> pa.Table:
    """One row per distinct window (`START`, `END`: `ends` None for no
    end) with the distinct groups among its rows: row i of `groups` (the
    group columns, none for one group) is a group window ``[starts[i],
    ends[i])`` holds."""
    if len(starts) == 0:
        return SCHEMA.empty_table()
    keys = groups if groups.num_columns else pa.table({_ONE: pa.array(np.zeros(len(starts), np.int8))})
    end = pa.nulls(len(starts), pa.int64()) if ends is None else pa.array(ends, pa.int64())
    pairs = keys.append_column(START, pa.array(starts, pa.int64())).append_column(END, end)
    distinct = pairs.group_by([START, END, *keys.column_names], use_threads=False).aggregate([])
    counted = distinct.group_by([START, END], use_threads=False).aggregate([(START, "count")])
    return counted.rename_columns([START, END, GROUPS]).cast(SCHEMA)


def first_per_group(table: pa.Table, keys: list[str], ts: str) -> pa.Table:
    """`held` rows of extents in progress: each group's earliest `ts` as its
    extent's start, no end yet (count and rolling windows)."""
    if table is None or table.num_rows == 0:
        return SCHEMA.empty_table()
    if not keys:
        return windows_held(np.array([pa.compute.min(table.column(ts)).as_py()]), None, pa.table({}))
    first = table.group_by(keys, use_threads=False).aggregate([(ts, "min")])
    return windows_held(first.column(f"{ts}_min").to_numpy(), None, first.select(keys))


__all__ = ["GROUPS", "SCHEMA", "first_per_group", "windows_held"]
