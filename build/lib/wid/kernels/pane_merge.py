"""Vectorised pane merge: pane partials in, window aggregates out, computed
with NumPy and pyarrow over a whole partition at a time (`mapInArrow`).

Python runs once per partition, never per row or per key: every step is an
array operation over all the partition's panes and windows. This module runs
on executors and imports only numpy, pyarrow and the standard library, so PySpark ships it by value and executors need no wid install.

Algorithm, for panes sorted by (keys, pane):

1. Enumerate each key's non-empty windows from its panes: pane q lies in
   windows ``ceil((q - off - L + 1)/H) .. floor((q - off)/H)`` (sliding) or
   ``q .. period end`` (cumulative); ranges of consecutive panes of a key
   overlap, so each pane only adds windows past the previous pane's last.
   Sessions (panes are event times) start at each pane more than the gap
   after the previous pane of its key.
2. Map each window to the index range ``[i0, i1)`` of its panes
   (`searchsorted` on a (key, pane) composite).
3. Merge fields over the ranges in O(1) per window: prefix sums for sums
   (int64 exactly, floats in long double), sparse tables for min, max,
   first and last (of order keys for numbers, of arg-min/arg-max over ranks
   for any other orderable type; ordered as Spark orders them), and shifted
   prefix sums for central moments.

A (key, pane) may appear more than once (`merge_sorted`): duplicates merge
like any two panes. Results equal the oracle's; see `wid.spark.panes` for
the Spark-only form this replaces when all fields can merge here, and
`wid.kernels.pane_reduce` for the fused form that computes the panes too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.semantics.windowing import Panes

WINDOW_ID = "_wid_window_id"
INT64_LIMIT = 9.2e18
BLOCK_ROWS = 1 << 16  # rows a block of range min/max tables covers (`_blocks`)
DENSE_FACTOR = 4  # `ranges` counts cells when they number at most this many per pane and window ...
DENSE_SLACK = 1 << 16  # ... plus this many


@dataclass(frozen=True)
class FieldOp:
    """One output field: `op` over input field(s).

    ops: ``sum`` (one input), ``min``/``max`` (one input, any orderable
    type), ``moments`` (inputs n, mx, vx[, my, vy, vxy]; outputs named in
    `outputs`: n, qx[, qy, cxy]). Over rows (`wid.kernels.pane_reduce`) also
    ``count`` (no input: rows; one input: its non-null values) and
    ``moments`` over raw values (inputs x or x, y)."""

    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class MergeSpec:
    """What to merge. `shape` is ``sliding`` (window w covers panes
    ``[w*hop + offset, w*hop + offset + length)``), ``cumulative`` (window
    w covers its period's panes up to w; `period` panes per period or None;
    windows run to the pane in column `last`) or ``gapped`` (session
    windows: panes are event times; a pane at most `length` after the
    previous pane of its key joins that pane's session; the window id is
    the session's first pane)."""

    keys: tuple[str, ...]
    pane: str
    shape: str
    fields: tuple[FieldOp, ...]
    length: int = 1
    hop: int = 1
    offset: int = 0
    period: int | None = None
    last: str | None = None

    @property
    def panes(self) -> Panes:
        """The sliding windows in pane units (`wid.semantics.windowing.Panes`)."""
        return Panes(self.length, self.hop, self.offset)


def _floor_div(a: np.ndarray, b: int) -> np.ndarray:
    return np.asarray(np.floor_divide(a, b), dtype=np.int64)


def _grouping(col: pa.ChunkedArray) -> pa.Array:
    """A key column as Spark groups it: floats as order-preserving int64
    keys (-0.0 with 0.0, every NaN together); other types unchanged."""
    arr = col.combine_chunks()
    if pa.types.is_floating(arr.type) and arr.null_count == 0:
        return pa.array(float_keys(arr.to_numpy().astype(np.float64)))
    return arr


def key_ids(tbl: pa.Table, keys: tuple[str, ...]) -> np.ndarray:
    """0-based id of each row's key, for a table sorted by the keys."""
    n = tbl.num_rows
    changed = np.zeros(n, dtype=bool)
    if n:
        changed[0] = True
    for k in keys:
        col = _grouping(tbl.column(k))
        if n > 1:
            diff = pc.not_equal(col.slice(1), col.slice(0, n - 1))
            changed[1:] |= diff.to_numpy(zero_copy_only=False).astype(bool)
    return np.cumsum(changed) - 1


def _spans(spec: MergeSpec, kid: np.ndarray, q: np.ndarray, last: int | None) -> tuple[np.ndarray, np.ndarray]:
    """For each pane (sliding or cumulative windows; panes sorted by key
    id `kid`, then pane `q`): the ids ``lo..hi`` of the windows it adds to
    its key's, those not over the key's previous pane (none when
    ``lo > hi``)."""
    if spec.shape == "sliding":
        lo, hi = spec.panes.first_window(q), spec.panes.last_window(q)
    else:
        if last is None:
            raise ValueError("cumulative windows need the last pane")
        lo = q.copy()
        hi = np.full_like(q, last)
        if spec.period is not None:
            hi = np.minimum(hi, (_floor_div(q, spec.period) + 1) * spec.period - 1)
    same_key = np.zeros(len(q), dtype=bool)
    same_key[1:] = kid[1:] == kid[:-1]
    prev_hi = np.concatenate([[np.iinfo(np.int64).min], hi[:-1]])
    return np.where(same_key, np.maximum(lo, prev_hi + 1), lo), hi


def new_windows(spec: MergeSpec, kid: np.ndarray, q: np.ndarray, last: int | None = None) -> np.ndarray:
    """How many windows each pane adds to its key's (`_spans`): summed over
    a key's panes, the windows `merge_sorted` makes for that key."""
    lo, hi = _spans(spec, kid, q, last)
    return np.asarray(np.maximum(hi - lo + 1, 0))


def _windows(spec: MergeSpec, kid: np.ndarray, q: np.ndarray, last: int | None) -> tuple[np.ndarray, ...]:
    """(row of a pane of the window's key, window id, first pane, last pane)."""
    if spec.shape == "gapped":
        return _sessions(kid, q, spec.length)
    lo, hi = _spans(spec, kid, q, last)
    count = np.maximum(hi - lo + 1, 0)
    row = np.repeat(np.arange(len(q)), count)
    step = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    window_id = lo[row] + step
    if spec.shape == "sliding":
        return row, window_id, spec.panes.first_pane(window_id), spec.panes.last_pane(window_id)
    if spec.period is None:
        first = np.full_like(window_id, q.min())  # one unbounded period: from the first pane on
    else:
        first = _floor_div(window_id, spec.period) * spec.period
    return row, window_id, first, window_id


def _sessions(kid: np.ndarray, q: np.ndarray, gap: int) -> tuple[np.ndarray, ...]:
    """Sessions over panes sorted by (key, event time): a row exactly `gap`
    after the previous one joins its session, as in Spark's
    ``session_window`` (`wid.semantics.sessions`; with a fixed gap the
    running end of a key's sorted rows is the previous row plus the gap)."""
    new = np.ones(len(q), dtype=bool)
    new[1:] = (kid[1:] != kid[:-1]) | (q[1:] - q[:-1] > gap)
    row = np.flatnonzero(new)
    return row, q[row], q[row], q[np.append(row[1:], len(q)) - 1]


def ranges(kid: np.ndarray, q: np.ndarray, wkid: np.ndarray, first: np.ndarray,
           last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index ranges [i0, i1) of the panes of each window (the rows with
    ``first <= q <= last`` of key `wkid`; `kid`, `q` sorted), by binary search
    on a (key, pane) composite; keys are processed in chunks that fit 62 bits.
    Where the (key, pane) cells number at most `DENSE_FACTOR` per pane and
    window (plus `DENSE_SLACK`), prefix counts over the cells replace the
    searches. A window of a key without panes gets an empty range."""
    if len(q) == 0:
        return np.zeros(len(wkid), dtype=np.int64), np.zeros(len(wkid), dtype=np.int64)
    base = int(q.min())
    span = max(int(q.max()) - base, int(last.max()) - base, 1) + 2
    bits = int(span).bit_length()
    per_chunk = 1 << max(0, 62 - bits)
    i0 = np.empty(len(wkid), dtype=np.int64)
    i1 = np.empty(len(wkid), dtype=np.int64)
    lo_q = np.clip(first - base, -1, span) + 1
    hi_q = np.clip(last - base, -1, span) + 1
    keys = max(int(kid.max()), int(wkid.max(initial=0))) + 1
    if keys * span <= DENSE_FACTOR * (len(q) + len(wkid)) + DENSE_SLACK:
        # Few (key, pane) cells: count the panes below each cell instead of searching (O(cells)).
        below = _prefix(np.bincount(kid.astype(np.int64) * span + (q - base + 1), minlength=keys * span))
        wk = wkid.astype(np.int64) * span
        return below[wk + lo_q], below[wk + hi_q + 1]
    for start in range(0, max(int(kid.max()), int(wkid.max(initial=0))) + 1, per_chunk):
        rows = (kid >= start) & (kid < start + per_chunk)
        wins = (wkid >= start) & (wkid < start + per_chunk)
        offset = int(np.argmax(rows))
        comp = (kid[rows] - start).astype(np.int64) * span + (q[rows] - base + 1)
        wk = (wkid[wins] - start).astype(np.int64) * span
        i0[wins], i1[wins] = (offset + r for r in _search(comp, wk + lo_q[wins], wk + hi_q[wins]))
    return i0, i1


def _search(sorted_: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.searchsorted`` of `lo` (left) and `hi` (right), in ascending
    order of `lo`: NumPy starts each search from the previous one's bounds
    when the values ascend, which made 125,000 searches in 400,000
    positions 3-4x faster with the argsort included (the WID operator's
    rolling rows arrive in any key order). Ranges ordered by their start
    are nearly always ordered by their end too (windows of one length,
    rolling extents), so one sort serves both; the results do not depend
    on the order."""
    if len(lo) < 2 or bool(np.all(lo[1:] >= lo[:-1])):
        return np.searchsorted(sorted_, lo, "left"), np.searchsorted(sorted_, hi, "right")
    order = np.argsort(lo, kind="stable")
    i0, i1 = np.empty(len(lo), dtype=np.int64), np.empty(len(lo), dtype=np.int64)
    i0[order] = np.searchsorted(sorted_, lo[order], "left")
    i1[order] = np.searchsorted(sorted_, hi[order], "right")
    return i0, i1


def _prefix(values: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1, dtype=values.dtype), np.cumsum(values)])


def _sum(col: pa.ChunkedArray, i0: np.ndarray, i1: np.ndarray) -> pa.Array:
    if col.null_count:
        present = _prefix((~col.is_null().to_numpy(zero_copy_only=False)).astype(np.int64))
        nonnull = (present[i1] - present[i0]) > 0
    else:
        nonnull = i1 > i0
    if pa.types.is_integer(col.type):
        raw = col.fill_null(0).to_numpy().astype(np.int64)
        check = _prefix(raw.astype(np.float64))
        if np.abs(check).max(initial=0) > INT64_LIMIT:
            raise ArithmeticError("long overflow in a window sum (Spark's ANSI mode raises here too)")
        total = _prefix(raw)
        return pa.array(total[i1] - total[i0], type=pa.int64(), mask=~nonnull)
    raw = col.fill_null(0).to_numpy().astype(np.float64)
    finite = np.isfinite(raw)
    total = _prefix(np.where(finite, raw, 0).astype(np.longdouble))
    result = (total[i1] - total[i0]).astype(np.float64)
    if finite.all():
        return pa.array(result, type=col.type, mask=~nonnull)
    # Infinities and NaN follow IEEE addition, which prefix differences cannot.
    pos, neg, nan = (_prefix(m.astype(np.int64)) for m in (raw == np.inf, raw == -np.inf, np.isnan(raw)))
    n_pos, n_neg, n_nan = (p[i1] - p[i0] for p in (pos, neg, nan))
    result = np.where(n_pos > 0, np.inf, result)
    result = np.where(n_neg > 0, -np.inf, result)
    result = np.where((n_nan > 0) | ((n_pos > 0) & (n_neg > 0)), np.nan, result)
    return pa.array(result, type=col.type, mask=~nonnull)


def float_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of float64 values, NaN above +inf as in
    Spark (every NaN is made the same positive NaN first)."""
    bits = (np.where(np.isnan(values), np.nan, values) + 0.0).astype(np.float64).view(np.int64)  # -0.0 == 0.0
    return np.asarray(np.where(bits < 0, ~bits ^ np.int64(-(2**63)), bits), dtype=np.int64)  # a total order


def worst_rank(op: str) -> int:
    """The rank of NULL for `op` (``min`` or ``max``): worse than any value."""
    return int(np.iinfo(np.int64).max if op == "min" else np.iinfo(np.int64).min)


def ranks(col: pa.ChunkedArray, op: str) -> np.ndarray:
    """Ranks ordering values as Spark does, NULL worst for `op`; struct
    values (first/last) order by their fields. Numbers rank by value in
    O(n); other types by a sort."""
    arr = col.combine_chunks()
    keys = _number_keys(arr, op)
    if keys is not None:
        return keys
    nulls = arr.is_null().to_numpy(zero_copy_only=False)
    worst = worst_rank(op)
    if pa.types.is_struct(arr.type):
        flat = pa.table({f.name: arr.field(i) for i, f in enumerate(arr.type)})
        by = [(f.name, "ascending", "at_start") for f in arr.type]  # Spark: NULL fields first
        order = pc.sort_indices(flat, sort_keys=by).to_numpy()
        rank = np.empty(len(arr), dtype=np.int64)
        rank[order] = np.arange(len(arr))
    else:
        rank = pc.rank(arr, sort_keys="ascending", tiebreaker="dense").to_numpy()
        rank = rank.astype(np.int64)
    return np.where(nulls, worst, rank)


def _sparse_table(base: np.ndarray, length: np.ndarray,
                  combine: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A sparse table over `base` for ranges of up to ``max(length)`` rows:
    row j holds `combine` over the 2^j values from each position (entries
    no range of that level reads are left as they are), and each range's
    level, ``floor(log2(length))``. One 2-D table, so that a range is
    answered by one gather per end whatever its level (a pass over all
    ranges per level was 2.7x slower: 26 ms against 10 ms for 312,000
    ranges over 416,000 rows)."""
    n = len(base)
    levels = max(1, int(length.max(initial=1)).bit_length())
    table = np.empty((levels, n), dtype=base.dtype)
    table[0] = base
    for j in range(1, levels):
        half = 1 << (j - 1)
        table[j, : n - half] = combine(table[j - 1, :-half], table[j - 1, half:])
        table[j, n - half:] = table[j - 1, n - half:]
    return table, (np.frexp(np.maximum(length, 1))[1] - 1).astype(np.int64)  # exact below 2^53


def _arg_best(rank: np.ndarray, i0: np.ndarray, i1: np.ndarray, op: str) -> np.ndarray:
    """Index of the min (or max) rank in each non-empty [i0, i1), by a
    sparse table of indices."""
    better = np.less_equal if op == "min" else np.greater_equal

    def pick(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(better(rank[a], rank[b]), a, b)

    table, level = _sparse_table(np.arange(len(rank)), i1 - i0, pick)
    return pick(table[level, i0], table[level, i1 - (np.int64(1) << level)])


def _best(keys: np.ndarray, i0: np.ndarray, i1: np.ndarray, op: str) -> np.ndarray:
    """The min (or max) of `keys` in each non-empty [i0, i1), by a sparse
    table of the values themselves: one ``np.minimum`` pass a level, where
    `_arg_best` gathers ranks twice a level (about 3x the time). Ranges in
    order of their start are answered a block of `BLOCK_ROWS` rows at a
    time (`_blocks`), with a table over that block's rows only."""
    better = np.minimum if op == "min" else np.maximum

    def answer(values: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        table, level = _sparse_table(values, b - a, better)
        return np.asarray(better(table[level, a], table[level, b - (np.int64(1) << level)]))

    starts = _blocks(i0, i1, len(keys))
    if starts is None:
        return answer(keys, i0, i1)
    parts = []
    for a, b in zip(starts, [*starts[1:], len(i0)], strict=True):
        lo, hi = int(i0[a]), int(i1[a:b].max())
        parts.append(answer(keys[lo:hi], i0[a:b] - lo, i1[a:b] - lo))
    return np.concatenate(parts)


def _blocks(i0: np.ndarray, i1: np.ndarray, rows: int) -> list[int] | None:
    """Where blocks of ranges start (indices into `i0`), each block the
    ranges that start in one run of `BLOCK_ROWS` of the `rows`; None when
    the ranges are not in order of their start, when `rows` is small, or
    when a block would reach more than 4 blocks' rows (long ranges: the
    tables would overlap). A table over 2.5M rows spills every cache
    level (180 MB for 9 levels): the min of 2.5M ranges of up to 260
    rows took 195 ms in one table, 95 ms in blocks (416,000: 13 and 10
    ms)."""
    if rows <= 2 * BLOCK_ROWS or len(i0) < 2 or not bool(np.all(i0[1:] >= i0[:-1])):
        return None
    starts = np.unique(np.searchsorted(i0, np.arange(0, rows, BLOCK_ROWS)))
    starts = starts[starts < len(i0)]
    reach = np.maximum.reduceat(i1, starts) - i0[starts]
    return None if bool(np.any(reach > 4 * BLOCK_ROWS)) else [int(x) for x in starts]


def _extreme(col: pa.ChunkedArray, i0: np.ndarray, i1: np.ndarray, op: str) -> pa.Array:
    """Min or max over ranges: numbers by value (`_best`) and decoded back,
    where the order keys say exactly which value won (no -0.0, whose key is
    0.0's); other values by rank and index (`_arg_best`)."""
    arr = col.combine_chunks()
    keys = _number_keys(arr, op, exact=True)
    if keys is None:
        return arr.take(pa.array(_arg_best(ranks(col, op), i0, i1, op)))
    best = _best(keys, i0, i1, op)
    values = _float_values(best) if pa.types.is_floating(arr.type) else best
    return pa.array(values, mask=best == worst_rank(op)).cast(arr.type)


def _number_keys(arr: pa.Array, op: str, exact: bool = False) -> np.ndarray | None:
    """Order keys of an integer or float column (NULL: `worst_rank`), or
    None when it is neither or a value equals the NULL sentinel; with
    `exact`, also when a key cannot stand for its value: -0.0 (ordered as
    0.0)."""
    if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)):
        return None
    raw = arr.fill_null(0).to_numpy()
    if pa.types.is_floating(arr.type):
        if exact and np.any((raw == 0) & np.signbit(raw)):
            return None
        keys = float_keys(raw.astype(np.float64))
    else:
        keys = raw.astype(np.int64)
    worst = worst_rank(op)
    if (keys == worst).any():  # the sentinel must not be a real value
        return None
    return np.where(arr.is_null().to_numpy(zero_copy_only=False), worst, keys)


def _float_values(keys: np.ndarray) -> np.ndarray:
    """The float64 values of `float_keys` (which is its own inverse on the bits)."""
    bits = np.where(keys < 0, ~keys ^ np.int64(-(2**63)), keys)
    return np.asarray(bits, dtype=np.int64).view(np.float64)


def _constant(mean: np.ndarray, n: np.ndarray, var: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> np.ndarray:
    """Windows whose values are all equal: their non-empty panes share one
    mean and have zero variance. Their central moments are exactly zero, as
    Spark's and the oracle's are, where the shifted sums leave rounding
    noise (which would make corr or beta over a constant column non-NULL)."""
    empty = n == 0
    keys = float_keys(mean)
    lo = np.where(empty, worst_rank("min"), keys)
    hi = np.where(empty, worst_rank("max"), keys)
    spread = _prefix((~empty & (var != 0)).astype(np.int64))
    same = _best(lo, i0, i1, "min") == _best(hi, i0, i1, "max")
    return np.asarray(same & (spread[i1] == spread[i0]), dtype=bool)


def _moments(tbl: pa.Table, field: FieldOp, kid: np.ndarray, i0: np.ndarray, i1: np.ndarray) -> dict[str, pa.Array]:
    """Central moments over ranges from pane (n, mean, var_pop) fields:
    prefix sums of ``n*d`` and ``var*n + n*d*d`` with d the pane mean minus
    its key's mean (long double), then ``q = S2 - S1^2/N`` per window, zero
    for a side that is constant in the window (`_constant`).
    Outputs, in order: n, qx[, qy, cxy]."""
    raw = {name: tbl.column(name).fill_null(0).to_numpy().astype(np.float64) for name in field.inputs}
    bad = np.zeros(tbl.num_rows, dtype=bool)
    for values in raw.values():
        bad |= ~np.isfinite(values)

    def num(name: str) -> np.ndarray:
        return np.where(bad, 0, raw[name]).astype(np.longdouble)

    n = num(field.inputs[0])
    starts = np.flatnonzero(np.concatenate([[True], kid[1:] != kid[:-1]]))
    key_n = np.add.reduceat(n, starts)
    total_n = _prefix(n)
    count = total_n[i1] - total_n[i0]
    safe = np.where(count > 0, count, 1)
    values = [count.astype(np.int64)]
    deltas, sums, constant = [], [], []
    for mean_name, var_name in zip(field.inputs[1::2][:2], field.inputs[2::2][:2], strict=True):
        m, v = num(mean_name), num(var_name)
        d = m - (np.add.reduceat(n * m, starts) / np.where(key_n > 0, key_n, 1))[kid]
        s1, s2 = _prefix(n * d), _prefix(v * n + n * d * d)
        w1 = s1[i1] - s1[i0]
        constant.append(_constant(raw[mean_name], raw[field.inputs[0]], raw[var_name], i0, i1))
        values.append(np.where(constant[-1], 0.0, (s2[i1] - s2[i0] - w1 * w1 / safe).astype(np.float64)))
        deltas.append(d)
        sums.append(w1)
    if len(field.inputs) == 6:
        sxy = _prefix(num(field.inputs[5]) * n + n * deltas[0] * deltas[1])
        cxy = (sxy[i1] - sxy[i0] - sums[0] * sums[1] / safe).astype(np.float64)
        values.append(np.where(constant[0] | constant[1], 0.0, cxy))
    nonfinite = _prefix(bad.astype(np.int64))
    poisoned = (nonfinite[i1] - nonfinite[i0]) > 0  # inf or NaN inputs give NaN moments, as in Spark
    values[1:] = [np.where(poisoned, np.nan, v) for v in values[1:]]
    return dict(zip(field.outputs, (pa.array(v) for v in values), strict=True))


def _order(tbl: pa.Table, keys: tuple[str, ...], pane: str) -> np.ndarray:
    """Row order by (keys as `_grouping` sees them, pane): one argsort of a
    composite int64 for a single integer key whose (key, pane) ranges fit 62
    bits, NumPy's lexsort for other integer keys, else pyarrow's sort."""
    cols = [_grouping(tbl.column(k)) for k in keys]
    q = tbl.column(pane).to_numpy()
    if all(pa.types.is_integer(c.type) and c.null_count == 0 for c in cols):
        ints = [c.to_numpy().astype(np.int64) for c in cols]
        if len(ints) == 1:
            k, q_lo, k_lo = ints[0], int(q.min()), int(ints[0].min())
            q_span, k_span = int(q.max()) - q_lo + 1, int(k.max()) - k_lo + 1
            if q_span * k_span < 1 << 62:
                return np.asarray(np.argsort((k - k_lo) * q_span + (q - q_lo)))
        return np.asarray(np.lexsort([q, *reversed(ints)]))
    named = pa.table({**{f"k{i}": c for i, c in enumerate(cols)}, "q": q})
    sort_keys = [(f"k{i}", "ascending") for i in range(len(cols))] + [("q", "ascending")]
    return np.asarray(pc.sort_indices(named, sort_keys=sort_keys).to_numpy())


def collect(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    """All batches as one table, or None when there are no rows."""
    received = list(batches)
    if not received:
        return None
    tbl = pa.Table.from_batches(received)
    return tbl if tbl.num_rows else None


def sort_panes(tbl: pa.Table, keys: tuple[str, ...], pane: str) -> tuple[pa.Table, np.ndarray]:
    """`tbl` sorted by (keys, pane), and each row's 0-based key id."""
    tbl = tbl.take(_order(tbl, keys, pane))
    return tbl, key_ids(tbl, keys)


def merge_sorted(tbl: pa.Table, kid: np.ndarray, spec: MergeSpec, last: int | None) -> pa.RecordBatch:
    """Windows over pane partials sorted by (key id `kid`, pane), each
    (key, pane) once or several times (duplicates merge like any two panes);
    `last` is the last pane of cumulative windows. Returns one batch: keys,
    `WINDOW_ID`, merged fields."""
    q = tbl.column(spec.pane).to_numpy().astype(np.int64)
    row, window_id, first, lastp = _windows(spec, kid, q, last)
    i0, i1 = ranges(kid, q, kid[row], first, lastp)
    cols: dict[str, pa.Array] = {k: tbl.column(k).combine_chunks().take(pa.array(i0)) for k in spec.keys}
    cols[WINDOW_ID] = pa.array(window_id, type=pa.int64())
    cols.update(merge_fields(tbl, spec.fields, kid, i0, i1))
    return pa.RecordBatch.from_pydict(cols)


def merge_fields(tbl: pa.Table, fields: tuple[FieldOp, ...], kid: np.ndarray, i0: np.ndarray,
                 i1: np.ndarray) -> dict[str, pa.Array]:
    """Each field merged over the non-empty row ranges ``[i0, i1)`` of `tbl`
    (rows sorted by key; `kid` their 0-based key ids), O(1) per range."""
    cols: dict[str, pa.Array] = {}
    for f in fields:
        if f.op == "sum":
            cols[f.outputs[0]] = _sum(tbl.column(f.inputs[0]), i0, i1)
        elif f.op in ("min", "max"):
            cols[f.outputs[0]] = _extreme(tbl.column(f.inputs[0]), i0, i1, f.op)
        else:
            cols.update(_moments(tbl, f, kid, i0, i1))
    return cols


def merge(batches: Iterator[pa.RecordBatch], spec: MergeSpec) -> Iterator[pa.RecordBatch]:
    """The `mapInArrow` function: all pane partials of a partition in, one
    batch of windows out (keys, `WINDOW_ID`, merged fields)."""
    tbl = collect(batches)
    if tbl is None:
        return
    last = int(pc.max(tbl.column(spec.last)).as_py()) if spec.last else None
    tbl, kid = sort_panes(tbl, spec.keys, spec.pane)
    yield merge_sorted(tbl, kid, spec, last)
