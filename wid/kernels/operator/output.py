"""The WID operator's output rows, as its processor returns them to Spark.
Every row has the same columns; `KIND` says what it is (`WINDOW_ROW`,
`RETRACTION_ROW`, `LATE_ROW`, `REJECTED_ROW`, `COUNTS_ROW`).

The rows leave the processor as pandas frames over Arrow-backed columns
(``pd.ArrowDtype``), which PySpark hands back to the JVM as the same Arrow
buffers (``__arrow_array__``): no per-value conversion in Python. (As Arrow
IPC blobs expanded by a ``mapInArrow`` step after the operator, they would
cost a second Python worker per task and every output byte's extra trip
through the JVM.) Runs on executors: numpy, pyarrow, pandas and the
standard library only."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.fields import END, START
from wid.kernels.operator.shard import ShardOutput, tables
from wid.kernels.tables import CHUNK_ROWS

KIND = "_wid_kind"
STATS = "_wid_stats"
SEQUENCE = "_wid_seq"  # the shard's micro-batch number (`ShardOutput.sequence`), where the plan's schema asks for it
# the kinds of output row, in `KIND`
WINDOW_ROW = "w"      # a window: bounds, final flag, group columns, aggregates (a join: a fired left row)
RETRACTION_ROW = "r"  # the natural key of a session window the sink must delete
LATE_ROW = "l"        # a late row for the dead letter
REJECTED_ROW = "d"    # a row rejected as bad input, for the dead letter
COUNTS_ROW = "s"      # one shard's counts for the micro-batch, JSON in `STATS`
# what a shard's output held, in its counts: rows of each kind, and the groups of its fullest window
EMITTED = "emitted"
FULLEST = "fullest"
COUNTED_ROWS = 1 << 15  # the most window rows of one table whose windows `fullest_window` hashes to count them


def conform(table: pa.Table, kind: str, schema: pa.Schema, sequence: int | None = None) -> pa.RecordBatch:
    """`table`'s columns cast to `schema`, missing ones NULL, `KIND` set,
    and `SEQUENCE` set to `sequence` when `schema` has it."""
    n = table.num_rows
    arrays = []
    for f in schema:
        if f.name == KIND:
            arrays.append(pa.repeat(pa.scalar(kind, f.type), n))  # a Python list of n strings: 0.25 s at 625,000
        elif f.name == SEQUENCE:
            arrays.append(pa.repeat(pa.scalar(sequence, f.type), n))
        elif f.name in table.column_names:
            arrays.append(pc.cast(table.column(f.name).combine_chunks(), f.type))
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def frames(out: ShardOutput, schema: pa.Schema, chunk_rows: int = CHUNK_ROWS) -> Iterator[pd.DataFrame]:
    """A shard's micro-batch as the operator's output rows in `schema`: its
    windows (read chunk by chunk when the engine emits lazily), retractions
    and late rows in frames of at most `chunk_rows` rows (one Arrow batch
    each on the way to the JVM: a bounded batch, as
    `wid.kernels.tables.to_chunks` explains), then exactly one stats
    row: the shard's counts, with what this output held (`EMITTED`,
    `FULLEST`), so that the driver learns it from the stats rows alone
    (`wid.spark.operator.rows.held`)."""
    emitted: dict[str, int] = {}
    fullest = 0
    for kind, part in ((WINDOW_ROW, out.windows), (RETRACTION_ROW, out.retractions), (LATE_ROW, out.late),
                       (REJECTED_ROW, out.rejected)):
        for table in tables(part):
            emitted[kind] = emitted.get(kind, 0) + table.num_rows
            fullest += fullest_window(table) if kind == WINDOW_ROW else 0
            rows = conform(table, kind, schema, out.sequence)
            for start in range(0, rows.num_rows, chunk_rows):
                yield frame(rows.slice(start, chunk_rows))
    counts = {**out.stats, EMITTED: emitted, FULLEST: fullest}
    stats = pa.table({STATS: pa.array([json.dumps(counts)], pa.string())})
    yield frame(conform(stats, COUNTS_ROW, schema, out.sequence))


def fullest_window(windows: pa.Table) -> int:
    """The most rows of `windows` (window rows) that share one window's
    bounds (`START`, `END`): the groups of its fullest window. A table
    without bounds (a window join's fired rows) counts as 0. Summed over a
    shard's tables and over the shards it is an upper bound of the
    micro-batch's fullest window, exact when each window's rows are in
    one table of one shard. A table of more than `COUNTED_ROWS` rows of
    several windows counts as its rows: hashing millions of windows (a
    micro-batch that opens every session) would cost the shard time and a
    hash table's memory, where the writer's exact query over the rows
    (`wid.pipelines.write.check_cap`) is small beside such a micro-batch."""
    if START not in windows.column_names or END not in windows.column_names:
        return 0
    bounds = windows.select([START, END])
    if all(len(set(pc.min_max(c).as_py().values())) == 1 for c in bounds.columns):
        return int(windows.num_rows)  # one window: no hashing for the common small micro-batch
    if windows.num_rows > COUNTED_ROWS:
        return int(windows.num_rows)
    counts = bounds.group_by([START, END]).aggregate([([], "count_all")])
    return int(pc.max(counts.column("count_all")).as_py())


def frame(rows: pa.RecordBatch) -> pd.DataFrame:
    """`rows` as pandas over the same Arrow buffers, except nested columns
    (struct, list, map): PySpark converts those value by value from Python
    objects (dicts for maps and structs), whatever the frame holds."""
    return pd.DataFrame({name: pd.Series(col.to_pylist(maps_as_pydicts="strict"), dtype=object)
                         if pa.types.is_nested(col.type) else pd.Series(pd.arrays.ArrowExtensionArray(col), copy=False)
                         for name, col in zip(rows.schema.names, rows.columns, strict=True)})


__all__ = ["COUNTS_ROW", "EMITTED", "FULLEST", "KIND", "LATE_ROW", "REJECTED_ROW", "RETRACTION_ROW", "SEQUENCE", "STATS", "WINDOW_ROW",
           "conform", "frame", "frames", "fullest_window"]
