"""Arrow helpers of the WID operator: group ids over key columns, Arrow IPC
blobs, and the operator's internal column names. Runs on executors: imports
only numpy and pyarrow."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

TS = "_wid_ts"          # event time, epoch microseconds
SRC = "_wid_src"        # source name
CLOCK = "_wid_clock"    # the watermark clock of a row whose source keeps one per partition (semantics.watermark.clock)
PUNCT = "_wid_punct"    # True on punctuation rows
PTIME = "_wid_ptime"    # a punctuation's time, epoch microseconds
PANE = "_wid_pane"      # pane id
FILE = "_wid_file"      # the file a row was read from (dead letters)
ORIGINAL = "_wid_o_"    # prefix of the original columns carried for the dead letter
REASON = "_wid_reason"  # why a row is rejected as bad input, or is late (dead letters)
ROW_JSON = "_wid_row_json"  # a rejected row as the dead letter stores it: JSON, or a malformed record's text
ROWS = "_wid_rows"      # the rows a partial combined before the shuffle stands for (`wid.kernels.operator.combine`)


SPAN = 1 << 62  # combined key codes stay below this (int64 arithmetic)


def group_ids(table: pa.Table, keys: Sequence[str]) -> tuple[np.ndarray, int, np.ndarray]:
    """(id of each row's key in ``[0, n)``, n, the first row of each id).
    Ids follow the sorted order of the rows' combined key codes (integer
    columns without NULLs by value, others by dictionary code), so they are
    deterministic for a given table; with no keys every row has id 0."""
    rows = table.num_rows
    if not keys or rows == 0:
        ids = np.zeros(rows, dtype=np.int64)
        return ids, int(rows > 0), np.zeros(int(rows > 0), dtype=np.int64)
    combined, size = np.zeros(rows, dtype=np.int64), 1
    for k in keys:
        col = table.column(k).combine_chunks()
        codes, card = _value_codes(col)
        if size * card >= SPAN:  # compress the codes so far, then fall back to dictionary codes
            _, combined = np.unique(combined, return_inverse=True)
            size = int(combined.max()) + 1
            if size * card >= SPAN:
                codes, card = _dictionary_codes(col)
        combined, size = combined * card + codes, size * card
    return codes_to_ids(combined, size)


def codes_to_ids(codes: np.ndarray, size: int) -> tuple[np.ndarray, int, np.ndarray]:
    """For `codes` in ``[0, size)``: (rank of each row's code among the
    distinct codes, the number of distinct codes, the first row of each),
    as ``np.unique(codes, return_index=True, return_inverse=True)`` gives
    them. Where `size` is at most twice the rows (a shard's keys times the
    panes of a micro-batch, typically) by a table of every code, without
    the sort: 10-20 ms instead of 150 ms for 1.25M rows."""
    rows = len(codes)
    if size > 2 * rows + 1024:
        uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return inverse.astype(np.int64), len(uniq), first
    present = np.zeros(size, dtype=bool)
    present[codes] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    ids = rank[codes]
    n = int(rank[-1]) + 1 if size else 0
    first = np.full(n, rows, dtype=np.int64)
    np.minimum.at(first, ids, np.arange(rows, dtype=np.int64))
    return ids, n, first


def _value_codes(col: pa.Array) -> tuple[np.ndarray, int]:
    """Codes in ``[0, card)`` of a key column (equal values, equal codes) and
    card: an integer column without NULLs is its own code (less its
    minimum), which spares a hash table over, for instance, event times."""
    if col.null_count == 0 and pa.types.is_integer(col.type):
        values = np.asarray(col.to_numpy(), dtype=np.int64)
        low, high = int(values.min()), int(values.max())
        if high - low < SPAN:
            return values - low, high - low + 1
    return _dictionary_codes(col)


def _dictionary_codes(col: pa.Array) -> tuple[np.ndarray, int]:
    enc = pc.dictionary_encode(col)
    return np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64), len(enc.dictionary) + 1


STATE_CODEC = "lz4"  # how `state_bytes` compresses (options are built per call: they do not pickle)


def to_bytes(table: pa.Table, options: pa.ipc.IpcWriteOptions | None = None) -> bytes:
    """`table` as an Arrow IPC stream (written with `options`)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


CHUNK_ROWS = 1 << 16  # rows a blob between Spark and the operator holds at most


def to_chunks(table: pa.Table, rows: int = CHUNK_ROWS) -> list[bytes]:
    """`table` as Arrow IPC streams of at most `rows` rows each (one
    zero-row stream for an empty table). Spark holds a blob as one binary
    value and copies it whole into a row buffer that grows by doubling: a
    shard's micro-batch in one blob (about 100 MB for 1.3M rolling output
    rows) ran a 1 GiB driver heap out of memory in ``local`` mode; at 65,536
    rows a blob is a few MB."""
    return [to_bytes(table.slice(start, rows)) for start in range(0, max(table.num_rows, 1), rows)]


def state_bytes(table: pa.Table) -> bytes:
    """`table` as the operator holds it in the state store: an Arrow IPC
    stream with LZ4-compressed buffers (`STATE_CODEC`). PySpark's state API
    moves values between Python and the JVM at about 60 MB/s (a 3.3 MB
    rolling-bins blob: 45-70 ms to read, 33-40 ms to write), and LZ4 cuts such a blob to about two thirds for 2 ms to
    write and 0.5 ms to read. `from_bytes` reads both forms, so state
    written uncompressed restarts unchanged."""
    return to_bytes(table, pa.ipc.IpcWriteOptions(compression=STATE_CODEC))


def from_bytes(blob: bytes | pa.Buffer) -> pa.Table:
    """The table of an Arrow IPC stream written by `to_bytes` or `state_bytes`."""
    return pa.ipc.open_stream(pa.py_buffer(blob)).read_all()


def gathered(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """`batches` in order, gathered into tables of at least `rows` rows
    (but for the last; empty batches are left out, and no batches give no
    table): a ``mapInArrow`` function that holds one such table at a time
    holds a bounded part of its partition."""
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows:
            held.append(batch)
            count += batch.num_rows
        if count >= rows:
            yield pa.Table.from_batches(held)
            held, count = [], 0
    if held:
        yield pa.Table.from_batches(held)


def concat(tables: Sequence[pa.Table]) -> pa.Table:
    """Concatenate tables of one schema (promoting nulls where they differ)."""
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="default")


def where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of `table` where boolean `mask` is true; `table` itself when
    every row is kept (a filter copies every column: 25 ms for 1.25M rows of
    three columns, and most micro-batches have no late or punctuation row)."""
    if mask.all():
        return table
    return table.filter(pa.array(mask))


def ints(table: pa.Table, name: str) -> np.ndarray:
    """An int64 column as a NumPy array (nulls as 0)."""
    col = table.column(name)
    return np.asarray((col.fill_null(0) if col.null_count else col).to_numpy(), dtype=np.int64)


__all__ = ["CHUNK_ROWS", "CLOCK", "FILE", "ORIGINAL", "PANE", "PTIME", "PUNCT", "ROWS", "SRC", "STATE_CODEC", "TS", "concat", "from_bytes",
           "codes_to_ids", "gathered", "group_ids", "ints", "state_bytes", "to_bytes", "to_chunks", "where"]
