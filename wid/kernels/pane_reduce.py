"""Rows to pane partials to windows in one vectorised pass per partition:
the fused pane merge (`merge_rows`, a `mapInArrow` function over rows
partitioned by key). No Spark aggregate runs; like `wid.kernels.pane_merge`,
this module imports only numpy, pyarrow and the standard library, so PySpark
ships it by value.

Each row carries its key columns, its pane index and *row values*, reduced
to pane partials by *row ops* (`pane_merge.FieldOp` with a row value as
input): ``sum`` (null when no value is), ``count`` (rows, or non-null values
of its one input; int64), ``min``/``max`` (Spark's order, NULL skipped) and
``moments`` over one or two raw values (x, or pairs (x, y) nulled together:
pane n, mean and population (co)variances, by two passes).

Algorithm, per chunk of at most `CHUNK_ROWS` rows:

1. key codes: an integer key column is its value minus its minimum when the
   range is small, other keys are dictionary-encoded (a hash, O(n)); several
   columns combine, renumbered when their product exceeds the rows.
2. cell = code * span + (pane - min pane). With few cells (at most
   ``DENSE_FACTOR`` per row, the dense-pane fast path) group ids come from a
   bincount over cells, without sorting; otherwise from one argsort of the
   cells (a lexsort when they overflow 62 bits). Group ids ascend with (key,
   pane), so the panes come out sorted as `pane_merge.merge_sorted` needs.
3. every field reduces per group with bincount and ``ufunc.at``, never
   moving the rows: float sums in float64 in row order (as Spark adds
   them), integer sums in int64 (overflow raises, as under Spark's ANSI
   mode), counts, and the arg-min or arg-max of Spark-ordered ranks.

One chunk goes straight to the window merge; the panes of several chunks
(a key's pane may then appear more than once) are sorted and merged as
`pane_merge.merge` does. Memory is bounded by one chunk plus the panes.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels import pane_merge as pm
from wid.kernels.tables import gathered

CHUNK_ROWS = 1 << 21
DENSE_FACTOR = 4
DENSE_SLACK = 1 << 16


def _column_codes(col: pa.Array, n: int) -> tuple[np.ndarray, int]:
    """A code per row of one key column, and the number of codes. Floating
    keys group as Spark groups them (-0.0 with 0.0, every NaN together)."""
    if pa.types.is_floating(col.type) and col.null_count == 0:
        col = pa.array(pm.float_keys(col.to_numpy().astype(np.float64)))
    if pa.types.is_integer(col.type) and col.null_count == 0:
        v = col.to_numpy().astype(np.int64)
        lo = int(v.min())
        card = int(v.max()) - lo + 1
        if card <= 2 * n + DENSE_SLACK:
            return v - lo, card
    encoded = pc.dictionary_encode(col, null_encoding="encode")
    return encoded.indices.to_numpy().astype(np.int64), len(encoded.dictionary)


def _key_codes(tbl: pa.Table, keys: tuple[str, ...]) -> tuple[np.ndarray, int]:
    """A code per row, equal exactly for equal keys, and the number of codes
    (combinations of several columns are renumbered when they outnumber the
    rows, so codes stay below the row count plus a slack)."""
    n = tbl.num_rows
    code, total = np.zeros(n, dtype=np.int64), 1
    for k in keys:
        c, card = _column_codes(tbl.column(k).combine_chunks(), n)
        if total > 1 and total * card > n + DENSE_SLACK:
            present, inverse = np.unique(code, return_inverse=True)
            code, total = inverse.astype(np.int64).reshape(-1), len(present)
        code, total = code * card + c, total * card
    return code, total


def _groups(code: np.ndarray, n_codes: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(group id per row, code per group, pane per group); groups ascend by
    (code, pane)."""
    q_lo = int(q.min())
    span = int(q.max()) - q_lo + 1
    if n_codes * span <= DENSE_FACTOR * len(q) + DENSE_SLACK:
        cell = code * span + (q - q_lo)
        used = np.bincount(cell, minlength=n_codes * span) > 0
        grp = (np.cumsum(used) - 1)[cell]
        cells = np.flatnonzero(used)
        return grp, cells // span, cells % span + q_lo
    if n_codes * span < 1 << 62:
        order = np.argsort(code * span + (q - q_lo))
    else:
        order = np.lexsort((q, code))
    sc, sq = code[order], q[order]
    new = np.ones(len(q), dtype=bool)
    new[1:] = (sc[1:] != sc[:-1]) | (sq[1:] != sq[:-1])
    grp = np.empty(len(q), dtype=np.int64)
    grp[order] = np.cumsum(new) - 1
    return grp, sc[new], sq[new]


def _valid(col: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(~col.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _sum(col: pa.ChunkedArray, grp: np.ndarray, size: int) -> pa.Array:
    """Per-group sums; NULL where a group has no value."""
    empty = np.bincount(grp[_valid(col)], minlength=size) == 0
    raw = col.fill_null(0).to_numpy()
    shadow = np.bincount(grp, weights=raw.astype(np.float64), minlength=size)
    if pa.types.is_integer(col.type):
        if np.abs(shadow).max(initial=0) > pm.INT64_LIMIT:
            raise ArithmeticError("long overflow in a pane sum (Spark's ANSI mode raises here too)")
        total = np.zeros(size, dtype=np.int64)
        np.add.at(total, grp, raw.astype(np.int64))
        return pa.array(total, type=pa.int64(), mask=empty)
    return pa.array(shadow, type=pa.float64(), mask=empty)


def _count(cols: list[pa.ChunkedArray], grp: np.ndarray, size: int) -> pa.Array:
    rows = grp if not cols else grp[_valid(cols[0])]
    return pa.array(np.bincount(rows, minlength=size).astype(np.int64), type=pa.int64())


def _extreme(col: pa.ChunkedArray, grp: np.ndarray, size: int, op: str) -> pa.Array:
    """Per-group min or max in Spark's order: the value of a row holding the
    best rank (NULL only when every value is)."""
    rank = pm.ranks(col, op)
    best = np.full(size, pm.worst_rank(op))
    (np.minimum if op == "min" else np.maximum).at(best, grp, rank)
    hit = np.flatnonzero(rank == best[grp])
    arg = np.empty(size, dtype=np.int64)
    arg[grp[hit]] = hit
    return col.combine_chunks().take(pa.array(arg))


def _moments(cols: list[pa.ChunkedArray], grp: np.ndarray, size: int) -> list[pa.Array]:
    """Per-group n, mean(s) and population (co)variances, the pane fields
    `pane_merge` merges: n, mx, vx[, my, vy, vxy]. Sums of deviations from
    a pivot (one of the group's values) give ``mean = p + S1/n`` and
    ``var = (S2 - S1^2/n)/n``, exactly p and 0 for a constant group, as
    Spark's running updates give. Rows count where every input is non-null;
    an empty group has zero moments."""
    valid = np.logical_and.reduce([_valid(c) for c in cols])
    n = np.bincount(grp[valid], minlength=size)
    safe = np.maximum(n, 1)
    rows = np.flatnonzero(valid)
    out, deltas, sums = [pa.array(n.astype(np.int64))], [], []
    with np.errstate(invalid="ignore", over="ignore"):
        for col in cols:
            x = col.fill_null(0).to_numpy().astype(np.float64)
            pivot = np.zeros(size)
            pivot[grp[rows]] = x[rows]
            d = np.where(valid, x - pivot[grp], 0.0)
            s1 = np.bincount(grp, weights=d, minlength=size)
            var = (np.bincount(grp, weights=d * d, minlength=size) - s1 * s1 / safe) / safe
            out += [pa.array(pivot + s1 / safe), pa.array(np.maximum(var, 0.0))]
            deltas.append(d)
            sums.append(s1)
        if len(cols) == 2:
            sxy = np.bincount(grp, weights=deltas[0] * deltas[1], minlength=size)
            out.append(pa.array((sxy - sums[0] * sums[1] / safe) / safe))
    return out


def _pane_field(op: pm.FieldOp, j: int) -> tuple[pm.FieldOp, list[str]]:
    """The window-merge op over the pane columns a row op `j` produces."""
    if op.op == "moments":
        parts = ["n", "mx", "vx"] + (["my", "vy", "vxy"] if len(op.inputs) == 2 else [])
        names = [f"_wid_q{j}_{p}" for p in parts]
        return pm.FieldOp("moments", tuple(names), op.outputs), names
    name = f"_wid_q{j}"
    return pm.FieldOp("sum" if op.op == "count" else op.op, (name,), op.outputs), [name]


def reduce(tbl: pa.Table, spec: pm.MergeSpec) -> tuple[pa.Table, np.ndarray, pm.MergeSpec]:
    """Rows (keys, pane, row values) to pane partials sorted by (key, pane):
    (panes, key id per pane, the window-merge spec over the panes)."""
    code, n_codes = _key_codes(tbl, spec.keys)
    grp, kcode, q = _groups(code, n_codes, tbl.column(spec.pane).to_numpy().astype(np.int64))
    size = len(q)
    rep = np.empty(size, dtype=np.int64)
    rep[grp] = np.arange(len(grp))
    cols: dict[str, pa.Array] = {k: tbl.column(k).combine_chunks().take(pa.array(rep)) for k in spec.keys}
    cols[spec.pane] = pa.array(q, type=pa.int64())
    fields = []
    for j, op in enumerate(spec.fields):
        merged, names = _pane_field(op, j)
        inputs = [tbl.column(c) for c in op.inputs]
        if op.op == "moments":
            values = _moments(inputs, grp, size)
        elif op.op == "count":
            values = [_count(inputs, grp, size)]
        elif op.op == "sum":
            values = [_sum(inputs[0], grp, size)]
        else:
            values = [_extreme(inputs[0], grp, size, op.op)]
        cols.update(zip(names, values, strict=True))
        fields.append(merged)
    kid = np.cumsum(np.concatenate([[True], kcode[1:] != kcode[:-1]])) - 1
    panes = pa.Table.from_pydict(cols)
    return panes, kid, pm.MergeSpec(keys=spec.keys, pane=spec.pane, shape=spec.shape, fields=tuple(fields),
                                    length=spec.length, hop=spec.hop, offset=spec.offset, period=spec.period)


def merge_rows(batches: Iterator[pa.RecordBatch], spec: pm.MergeSpec) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function: rows of a partition in (all rows of a key
    in one partition; `spec.fields` are row ops), one batch of windows out
    (keys, `pane_merge.WINDOW_ID`, merged fields, as `pane_merge.merge`)."""
    reduced, last = [], None
    for chunk in gathered(batches, CHUNK_ROWS):
        if spec.last:
            top = int(pc.max(chunk.column(spec.last)).as_py())
            last = top if last is None else max(last, top)
        reduced.append(reduce(chunk, spec))
    if not reduced:
        return
    panes, kid, merge_spec = reduced[0]
    if len(reduced) > 1:
        panes, kid = pm.sort_panes(pa.concat_tables([r[0] for r in reduced]), spec.keys, spec.pane)
    yield pm.merge_sorted(panes, kid, merge_spec, last)
