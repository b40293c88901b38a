"""Vectorised aggregators: ``zero / add / merge / finish`` over whole columns
with NumPy and pyarrow, for wid's streaming operator, which runs them on
executors once per micro-batch and shard, never per row or per key.

Every aggregation has *partial fields* (pyarrow arrays, one entry per group):

- `rows(table)`: one partial per input row (the ``add`` of one row to
  ``zero``);
- `merge(parts, ids, n)`: the partials of rows (or of earlier partials) with
  the same id in ``[0, n)`` merged into one per id;
- `finish(parts)`: the output column.

The fields follow the vectorised pane merge (`wid.kernels.pane_merge`), so
windows can be merged from panes there in O(1) per window: sums, min/max
(first/last as a struct ``(t, b, v)`` ordered by event time, tie-breaker and
value, as in Spark), and central moments ``(n, mean, var_pop)``. Order
statistics and exact distinct counts keep their values as lists (holistic
states). SQL NULL semantics: NULL inputs are skipped; an aggregate over no
value is NULL (`count` gives 0); undefined statistics are NULL, never NaN.

This module imports only numpy and pyarrow (executors need no wid install).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Parts = dict[str, pa.Array]


class CapError(RuntimeError):
    """A cap was hit; the message says which. `index` is the position of the
    offending group in the merged partials, for the caller to name its window."""

    def __init__(self, message: str, index: int = 0) -> None:
        super().__init__(message)
        self.index = index


def _sorted_by(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable order of `ids` and the start of each id's run in that order
    (every id in ``[0, n)`` must occur)."""
    order = np.argsort(ids, kind="stable")
    starts = np.searchsorted(ids[order], np.arange(n))
    return order, starts


def _hash_merge(parts: Parts, ops: dict[str, str], ids: np.ndarray, n: int) -> Parts:
    """Merge fields by ``sum``, ``min`` or ``max`` (NULLs skipped, NULL when
    a group has no value), each by `_dense_merge` where it can, else by
    pyarrow's hash aggregation, whose results define the semantics."""
    merged = {k: _dense_merge(_contiguous(parts[k]), op, ids, n) for k, op in ops.items()}
    rest = {k: op for k, op in ops.items() if merged[k] is None}
    if rest:
        table = pa.table({"_id": pa.array(ids, pa.int64()), **{k: parts[k] for k in rest}})
        out = table.group_by("_id", use_threads=False).aggregate([(k, op) for k, op in rest.items()])
        order = pa.array(np.argsort(out.column("_id").to_numpy()))
        merged.update({k: out.column(f"{k}_{op}").take(order).combine_chunks() for k, op in rest.items()})
    return {k: v for k, v in merged.items() if v is not None}


def _contiguous(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def _dense_merge(col: pa.Array, op: str, ids: np.ndarray, n: int) -> pa.Array | None:
    """`col` merged by `op` over the dense `ids` with NumPy's unbuffered
    ``ufunc.at`` (a tenth of the hash aggregation's time: the ids are
    already group numbers), giving exactly what pyarrow's hash aggregation
    gives: sums of signed integers as int64 (wrapping as Arrow's do), sums of
    float64 in input order, min/max in the input type. None for other types,
    and for floats holding NaN (Arrow skips NaN there unless a group has
    nothing else) or -0.0 (Arrow keeps the first of equal values, 0.0 or
    -0.0, ``ufunc.at`` the last) under min/max, which pyarrow then merges."""
    t = col.type
    floats = pa.types.is_float64(t)
    if not (floats or pa.types.is_signed_integer(t)):
        return None
    full = col.null_count == 0  # then every group has a value: `VectorAgg.merge` gets every id in [0, n)
    valid = None if full else _is_valid(col)
    values = (col if full else col.fill_null(0)).to_numpy(zero_copy_only=False)
    if op == "sum":
        out = np.zeros(n, np.float64 if floats else np.int64)
        np.add.at(out, ids, values)
    else:
        if floats and (np.isnan(values).any() or np.signbit(values[values == 0]).any()):
            return None
        lo, hi = (-np.inf, np.inf) if floats else (np.iinfo(values.dtype).min, np.iinfo(values.dtype).max)
        out = np.full(n, hi if op == "min" else lo, values.dtype)
        (np.minimum if op == "min" else np.maximum).at(out, *((ids, values) if full else (ids[valid], values[valid])))
    absent = None if full else np.bincount(ids[valid], minlength=n) == 0
    return pa.array(out, pa.int64() if op == "sum" and not floats else t, mask=absent)


def _flat_values(lists: pa.Array, ids: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The values of list arrays, each with the id of the list it was in."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    owners = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    return pc.list_flatten(lists), ids[owners]


def _lists(values: pa.Array, owners: np.ndarray, n: int) -> pa.Array:
    """A list array of length `n`: list i holds the values owned by i."""
    order = np.argsort(owners, kind="stable")
    offsets = np.searchsorted(owners[order], np.arange(n + 1)).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), values.take(pa.array(order)))


def _is_valid(col: pa.Array) -> np.ndarray:
    return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _floats(col: pa.Array) -> np.ndarray:
    return np.asarray(pc.cast(col, pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)


@dataclass(frozen=True)
class VectorAgg:
    """One aggregation: `name` (the catalog name), its input columns, the
    tie-breaker column for first/last, `percent` for percentiles, the cap of
    an exact distinct count, and its alias (for messages)."""

    name: str
    column: str | None = None
    column2: str | None = None
    tie_breaker: str | None = None
    percent: float | None = None
    distinct_cap: int | None = None
    alias: str = ""

    # -- one partial per row ------------------------------------------------------
    def rows(self, table: pa.Table, ts_us: pa.Array) -> Parts:
        """Partials of single rows. `table` holds the input columns; `ts_us`
        the event times (first/last order by them)."""
        kind = _KIND[self.name]
        if self.name == "count":
            valid = np.ones(table.num_rows, bool) if self.column is None else _is_valid(table.column(self.column))
            return {"n": pa.array(valid.astype(np.int64))}
        x = table.column(self.column or "").combine_chunks()
        if kind == "moments":
            return self._moment_rows(table, x)
        if kind == "paired":
            return self._paired_rows(table, x)
        if kind == "extreme":
            return {"v": x}
        if kind == "ordered":
            return {"k": self._ordered_rows(table, x, ts_us)}
        if kind == "avg":
            valid = _is_valid(x)
            return {"s": pa.array(_floats(x), mask=~valid), "n": pa.array(valid.astype(np.int64))}
        if kind == "sum":
            return {"v": pc.multiply(pc.cast(x, pa.float64()), pc.cast(x, pa.float64())) if self.name == "sum2" else x}
        valid = _is_valid(x)
        return {"l": _lists(x.filter(pa.array(valid)), np.flatnonzero(valid), table.num_rows)}

    def _ordered_rows(self, table: pa.Table, x: pa.Array, ts_us: pa.Array) -> pa.Array:
        names, arrays = ["t"], [pa.array(ts_us, pa.int64())]
        if self.tie_breaker is not None:
            names.append("b")
            arrays.append(table.column(self.tie_breaker).combine_chunks())
        names.append("v")
        arrays.append(x)
        return pa.StructArray.from_arrays(arrays, names=names, mask=pc.invert(x.is_valid()))

    def _pair(self, table: pa.Table, x: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = table.column(self.column2 or "").combine_chunks()
        both = _is_valid(x) & _is_valid(y)
        return both, _floats(x), _floats(y)

    def _moment_rows(self, table: pa.Table, x: pa.Array) -> Parts:
        if self.column2 is None:
            valid, xs = _is_valid(x), _floats(x)
            return {"n": pa.array(valid.astype(np.int64)), "mx": pa.array(xs, mask=~valid),
                    "vx": pa.array(np.zeros(len(xs)), mask=~valid)}
        both, xs, ys = self._pair(table, x)
        zero = pa.array(np.zeros(len(xs)), mask=~both)
        return {"n": pa.array(both.astype(np.int64)), "mx": pa.array(xs, mask=~both), "vx": zero,
                "my": pa.array(ys, mask=~both), "vy": zero, "vxy": zero}

    def _paired_rows(self, table: pa.Table, x: pa.Array) -> Parts:
        both, xs, ws = self._pair(table, x)
        if self.name == "wsum":
            return {"v": pa.array(xs * ws, mask=~both)}
        return {"s": pa.array(xs * ws, mask=~both), "n": pa.array(ws, mask=~both)}

    # -- merging --------------------------------------------------------------------
    def merge(self, parts: Parts, ids: np.ndarray, n: int) -> Parts:
        """Merge partials with equal `ids` (every id in ``[0, n)`` occurs)."""
        ids = np.asarray(ids, dtype=np.int64)
        kind = _KIND[self.name]
        if kind == "moments":
            return _merge_moments(parts, ids, n)
        if kind == "ordered":
            return {"k": _merge_ordered(parts["k"], ids, n, self.name == "first")}
        if kind == "holistic":
            values, owners = _flat_values(parts["l"], ids)
            if self.name == "count_distinct":
                pairs = pa.table({"o": owners, "v": values}).group_by(["o", "v"], use_threads=False).aggregate([])
                values, owners = pairs.column("v").combine_chunks(), pairs.column("o").to_numpy()
            return {"l": _lists(values, owners, n)}
        ops = {"v": self.name} if kind == "extreme" else {k: "sum" for k in parts}
        return _hash_merge(parts, ops, ids, n)

    def pane_ops(self) -> dict[str, str] | None:
        """The `wid.kernels.pane_merge` op of each field (``moments`` for the
        moment fields as a block), or None for holistic aggregations."""
        kind = _KIND[self.name]
        if kind == "holistic":
            return None
        if kind == "moments":
            return {"moments": "moments"}
        if kind == "ordered":
            return {"k": "min" if self.name == "first" else "max"}
        if kind == "extreme":
            return {"v": self.name}
        return {k: "sum" for k in _FIELDS.get(self.name, _FIELDS.get(kind, ()))}

    # -- finishing --------------------------------------------------------------------
    def finish(self, parts: Parts) -> pa.Array:
        """The output values. For moments `parts` holds the merged forms
        (n, qx[, qy, cxy]) or the pane forms (n, mx, vx[, ...]). Raises
        CapError when an exact distinct count exceeds its cap."""
        kind = _KIND[self.name]
        if kind == "moments":
            return _finish_moments(self.name, _central(parts))
        if kind == "ordered":
            return pc.struct_field(parts["k"], "v")
        if kind == "holistic":
            return self._finish_holistic(parts["l"])
        if self.name == "count":
            return pc.cast(parts["n"].fill_null(0), pa.int64())
        if kind in ("avg", "paired") and self.name != "wsum":
            s, w = parts["s"], pc.cast(parts["n"], pa.float64())
            return pc.divide(s, pc.if_else(pc.equal(w, 0.0), pa.scalar(None, pa.float64()), w))
        return parts["v"]

    def _finish_holistic(self, lists: pa.Array) -> pa.Array:
        sizes = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
        if self.name == "count_distinct":
            cap = self.distinct_cap
            if cap is not None and (sizes > cap).any():
                raise CapError(f"distinct-value cap hit: max_distinct_values_per_group={cap} reached by "
                               f"aggregation '{self.alias}'", int(np.argmax(sizes > cap)))
            return pa.array(sizes)
        return _percentiles(lists, sizes, 50.0 if self.name == "med" else (self.percent or 0.0))


_KIND = {"count": "count", "sum": "sum", "sum2": "sum", "min": "extreme", "max": "extreme", "avg": "avg",
         "wavg": "paired", "wsum": "paired", "first": "ordered", "last": "ordered", "count_distinct": "holistic",
         "med": "holistic", "percentile": "holistic", "var": "moments", "std": "moments", "covar": "moments",
         "corr": "moments", "beta": "moments"}
_FIELDS = {"count": ("n",), "sum": ("v",), "avg": ("s", "n"), "paired": ("s", "n"), "wsum": ("v",)}


def vector_agg(name: str, column: str | None = None, column2: str | None = None, tie_breaker: str | None = None,
               percent: float | None = None, distinct_cap: int | None = None, alias: str = "") -> VectorAgg:
    """A `VectorAgg`; approximate distinct counts are computed exactly here
    (an exact answer is within any error bound) with a set per group."""
    if name not in _KIND:
        raise KeyError(name)
    return VectorAgg(name, column, column2, tie_breaker, percent, distinct_cap, alias)


def _merge_ordered(keys: pa.Array, ids: np.ndarray, n: int, first: bool) -> pa.Array:
    """Per id, the smallest (first) or largest (last) non-null struct."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    order = "ascending" if first else "descending"
    fields = [f.name for f in keys.type]
    table = pa.table({"_id": ids, "_null": pc.is_null(keys), **{f: pc.struct_field(keys, f) for f in fields}})
    nulls = "at_start" if first else "at_end"  # SQL orders NULL below every value
    sort = [("_id", "ascending", nulls), ("_null", "ascending", nulls)] + [(f, order, nulls) for f in fields]
    idx = pc.sort_indices(table, sort_keys=sort).to_numpy()
    starts = np.searchsorted(ids[idx], np.arange(n))
    return keys.take(pa.array(idx[starts]))


_MOMENT_INS = ("n", "mx", "vx", "my", "vy", "vxy")


def _merge_moments(parts: Parts, ids: np.ndarray, n: int) -> Parts:
    """Pane moments (n, mean, var_pop) merged by the parallel-axis theorem,
    two-pass: the merged mean first, then squared deviations from it."""
    paired = "my" in parts
    order, starts = _sorted_by(ids, n)
    cnt = parts["n"].to_numpy(zero_copy_only=False).astype(np.float64)[order]
    total = np.add.reduceat(cnt, starts) if len(cnt) else np.zeros(n)
    safe = np.where(total > 0, total, 1.0)
    out: Parts = {"n": pa.array(total.astype(np.int64))}
    dev = {}
    for side in ("x", "y") if paired else ("x",):
        m = _floats(parts[f"m{side}"])[order]
        v = _floats(parts[f"v{side}"])[order]
        mean = np.add.reduceat(cnt * m, starts) / safe
        dev[side] = m - np.repeat(mean, np.diff(np.append(starts, len(m))))
        q = np.add.reduceat(cnt * (v + dev[side] ** 2), starts)
        out[f"m{side}"] = pa.array(mean, mask=total == 0)
        out[f"v{side}"] = pa.array(q / safe, mask=total == 0)
    if paired:
        c = _floats(parts["vxy"])[order]
        out["vxy"] = pa.array(np.add.reduceat(cnt * (c + dev["x"] * dev["y"]), starts) / safe, mask=total == 0)
    return {k: out[k] for k in _MOMENT_INS if k in out}


def _central(parts: Parts) -> dict[str, np.ndarray]:
    """Sums of squared deviations (qx[, qy, cxy]) and n, from pane forms
    (var_pop) or from `pane_merge` outputs (already sums)."""
    n = parts["n"].to_numpy(zero_copy_only=False).astype(np.float64)
    if "qx" in parts:
        return {"n": n, **{k: _floats(parts[k]) for k in ("qx", "qy", "cxy") if k in parts}}
    out = {"n": n, "qx": _floats(parts["vx"]) * n}
    if "vy" in parts:
        out.update(qy=_floats(parts["vy"]) * n, cxy=_floats(parts["vxy"]) * n)
    return out


def _finish_moments(name: str, c: dict[str, np.ndarray]) -> pa.Array:
    n = c["n"]
    ok = n >= 2
    denom = np.where(ok, n - 1, 1.0)
    if name in ("var", "std"):
        var = np.maximum(c["qx"], 0.0) / denom
        return pa.array(var if name == "var" else np.sqrt(var), mask=~ok)
    if name == "covar":
        return pa.array(c["cxy"] / denom, mask=~ok)
    if name == "corr":
        good = ok & (c["qx"] > 0) & (c["qy"] > 0)
        return pa.array(c["cxy"] / np.sqrt(np.where(good, c["qx"] * c["qy"], 1.0)), mask=~good)
    good = ok & (c["qy"] > 0)  # beta(Y=column, X=column2): X is the y slot
    return pa.array(c["cxy"] / np.where(good, c["qy"], 1.0), mask=~good)


def _percentiles(lists: pa.Array, sizes: np.ndarray, percent: float) -> pa.Array:
    """Linear-interpolation percentile of each list (DolphinDB and Spark:
    position ``(n-1) * percent/100`` in sorted order); NULL for empty lists."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values = _floats(pc.list_flatten(lists))
    owners = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    order = np.lexsort((values, owners))
    values = values[order]
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    pos = (np.maximum(sizes, 1) - 1) * (percent / 100.0)
    lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
    empty = sizes == 0
    low = values[np.where(empty, 0, first + lo)] if len(values) else np.zeros(len(sizes))
    high = values[np.where(empty, 0, first + hi)] if len(values) else np.zeros(len(sizes))
    return pa.array(low + (pos - lo) * (high - low), mask=empty)


__all__ = ["CapError", "Parts", "VectorAgg", "vector_agg"]
