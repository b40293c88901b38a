"""The vectorised pane merge against brute force over its definition
(no Spark): every window holding a non-empty pane, merged over its panes,
with Spark's ordering (NaN above every number, NULLs skipped)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.kernels import pane_merge as pm

VAL = st.one_of(st.none(), st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0, 0.0]),
                st.floats(-1e6, 1e6, allow_nan=False))


@st.composite
def panes(draw: st.DrawFn) -> list[dict[str, Any]]:
    rows = []
    for key in draw(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, min_size=1)):
        for pane in draw(st.lists(st.integers(-30, 30), unique=True, min_size=1, max_size=15)):
            rows.append({"k": key, "_wid_pane": pane, "n": draw(st.integers(0, 5)), "x": draw(VAL),
                         "s": draw(st.one_of(st.none(), st.text("xyZé", max_size=3)))})
    return rows


def spark_key(v: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


def brute(rows: list[dict[str, Any]], spec: pm.MergeSpec, last: int) -> dict[tuple[Any, int], tuple[Any, ...]]:
    out = {}
    for key in {r["k"] for r in rows}:
        mine = [r for r in rows if r["k"] == key]
        wids: set[int] = set()
        for r in mine:
            q = r["_wid_pane"]
            if spec.shape == "sliding":
                wids |= {w for w in range(-100, 100)
                         if w * spec.hop + spec.offset <= q < w * spec.hop + spec.offset + spec.length}
            else:
                end = last if spec.period is None else min(last, (q // spec.period + 1) * spec.period - 1)
                wids |= set(range(q, end + 1))
        for w in wids:
            if spec.shape == "sliding":
                lo, hi = w * spec.hop + spec.offset, w * spec.hop + spec.offset + spec.length - 1
            else:
                lo, hi = (-(10**9) if spec.period is None else (w // spec.period) * spec.period), w
            inside = [r for r in mine if lo <= r["_wid_pane"] <= hi]
            xs = [r["x"] for r in inside if r["x"] is not None]
            ss = [r["s"] for r in inside if r["s"] is not None]
            out[(key, w)] = (sum(r["n"] for r in inside), sum(xs) if xs else None,  # IEEE: inf - inf is NaN
                             min(xs, key=spark_key) if xs else None, max(xs, key=spark_key) if xs else None,
                             min(ss, key=lambda t: t.encode()) if ss else None)
    return out


def same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
    return bool(a == b)


FIELDS = (pm.FieldOp("sum", ("n",), ("on",)), pm.FieldOp("sum", ("x",), ("ox",)),
          pm.FieldOp("min", ("x",), ("lo",)), pm.FieldOp("max", ("x",), ("hi",)), pm.FieldOp("min", ("s",), ("smin",)))


@settings(max_examples=300, deadline=None)
@given(panes(), st.sampled_from(["sliding", "cumulative"]), st.integers(1, 7), st.integers(1, 7),
       st.integers(-5, 5), st.sampled_from([None, 3, 5]))
def test_merge_equals_brute_force(rows: list[dict[str, Any]], kind: str, a: int, b: int, off: int,
                                  period: int | None) -> None:
    length, hop = max(a, b), min(a, b)
    last = max(r["_wid_pane"] for r in rows) + 2
    table = pa.Table.from_pylist([{**r, "_wid_last": last} for r in rows]).cast(pa.schema(
        [("k", pa.string()), ("_wid_pane", pa.int64()), ("n", pa.int64()), ("x", pa.float64()),
         ("s", pa.string()), ("_wid_last", pa.int64())]))
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape=kind, fields=FIELDS, length=length, hop=hop, offset=off,
                        period=period, last="_wid_last" if kind == "cumulative" else None)
    got = {}
    for batch in pm.merge(iter(table.to_batches(max_chunksize=7)), spec):
        for r in batch.to_pylist():
            got[(r["k"], r[pm.WINDOW_ID])] = (r["on"], r["ox"], r["lo"], r["hi"], r["smin"])
    want = brute(rows, spec, last)
    assert got.keys() == want.keys()
    for key, values in want.items():
        assert all(same(g, w) for g, w in zip(got[key], values, strict=True)), (key, got[key], values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.floats(-1e3, 1e3), st.floats(0, 50)), min_size=1, max_size=25),
       st.integers(1, 6), st.floats(-1e6, 1e6))
def test_moments_merge_equals_definition(stats: list[tuple[int, float, float]], length: int, offset: float) -> None:
    # panes 0..n-1 of one key, each with (count, mean, population variance); the mean is
    # shifted by `offset` to check the per-key shift keeps precision
    rows = [{"k": 1, "_wid_pane": i, "n": n, "m": m + offset, "v": v} for i, (n, m, v) in enumerate(stats)]
    table = pa.Table.from_pylist(rows)
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape="sliding", length=length, hop=1,
                        fields=(pm.FieldOp("moments", ("n", "m", "v"), ("on", "oq")),))
    got = {r[pm.WINDOW_ID]: (r["on"], r["oq"]) for b in pm.merge(iter([table.to_batches()[0]]), spec) for r in b.to_pylist()}
    for w, (n, q) in got.items():
        inside = [r for r in rows if w <= r["_wid_pane"] <= w + length - 1]
        total = sum(r["n"] for r in inside)
        assert n == total
        if total:
            mean = sum(r["n"] * r["m"] for r in inside) / total
            want = sum(r["v"] * r["n"] + r["n"] * (r["m"] - mean) ** 2 for r in inside)
            assert math.isclose(q, want, rel_tol=1e-6, abs_tol=1e-6 * max(1.0, total)), (w, q, want)


def test_moments_of_a_constant_window_are_exactly_zero() -> None:
    #   panes:   0      1      2      3
    #   mean:   0.1    0.1    5.0    0.1      var 0 everywhere but pane 2
    #   window [0, 1] holds one value: q is 0.0 exactly (corr/beta are NULL there),
    #   not the rounding noise of sums shifted by the key's mean
    rows = [{"k": 1, "_wid_pane": i, "n": n, "m": m, "v": v}
            for i, (n, m, v) in enumerate([(3, 0.1, 0.0), (7, 0.1, 0.0), (2, 5.0, 1.5), (1, 0.1, 0.0)])]
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape="sliding", length=2, hop=1,
                        fields=(pm.FieldOp("moments", ("n", "m", "v"), ("on", "oq")),))
    got = {r[pm.WINDOW_ID]: r["oq"] for b in pm.merge(iter(pa.Table.from_pylist(rows).to_batches()), spec)
           for r in b.to_pylist()}
    assert got[-1] == 0.0 and got[0] == 0.0 and got[3] == 0.0
    assert got[1] > 0 and got[2] > 0


def test_min_and_max_return_the_value_itself_signed_zero_included() -> None:
    """Numbers merge by their order keys, where -0.0 and 0.0 are one key;
    the result must still be the pane's own value, as Spark's min and max
    return it (and integers of every width keep their type)."""
    col = pa.chunked_array([pa.array([-0.0, 1.0, None, -2.5], pa.float64())])
    i0, i1 = pa.array([0, 0, 2]).to_numpy(), pa.array([1, 2, 3]).to_numpy()
    low = pm._extreme(col, i0, i1, "min").to_pylist()
    assert [math.copysign(1, v) if v == 0 else v for v in low[:2]] == [-1, -1] and low[2] is None
    assert pm._extreme(col, pa.array([0, 1]).to_numpy(), pa.array([4, 4]).to_numpy(), "max").to_pylist() == [1.0, 1.0]
    ints = pa.chunked_array([pa.array([5, -7, None, 3], pa.int32())])
    got = pm._extreme(ints, pa.array([0, 2]).to_numpy(), pa.array([4, 3]).to_numpy(), "min")
    assert got.type == pa.int32() and got.to_pylist() == [-7, None]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), longest=st.sampled_from([1, 7, 300, 9 * pm.BLOCK_ROWS]),
       shuffled=st.booleans(), nulls=st.booleans())
def test_min_and_max_of_many_ranges_equal_a_reduction_over_each(seed: int, longest: int, shuffled: bool,
                                                                 nulls: bool) -> None:
    """Tables of more than two `pm.BLOCK_ROWS` blocks, with ranges in order
    of their start (answered block by block), shuffled, and long enough
    that blocks would overlap (answered in one table): each range's min
    and max equal NumPy's reduction over the range's own rows."""
    rng = np.random.default_rng(seed)
    n = 2 * pm.BLOCK_ROWS + int(rng.integers(1, pm.BLOCK_ROWS))
    values = rng.normal(size=n)
    mask = rng.random(n) < 0.05 if nulls else np.zeros(n, dtype=bool)
    i0 = np.sort(rng.integers(0, n, n // 3))
    i1 = np.minimum(i0 + rng.integers(1, longest + 1, len(i0)), n)
    if shuffled:
        order = rng.permutation(len(i0))
        i0, i1 = i0[order], i1[order]
    col = pa.chunked_array([pa.array(values, mask=mask)])
    for op, reduce, empty in (("min", np.minimum, np.inf), ("max", np.maximum, -np.inf)):
        padded = np.append(np.where(mask, empty, values), empty)  # reduceat over [i0, i1): pairs, one past the end
        want = reduce.reduceat(padded, np.column_stack([i0, i1]).ravel())[::2]
        got = pm._extreme(col, i0, i1, op).to_numpy(zero_copy_only=False)
        assert np.array_equal(np.where(np.isinf(want), np.nan, want), got, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), keys=st.integers(1, 6), dense=st.booleans())
def test_pane_ranges_equal_brute_force_counted_or_searched(seed: int, keys: int, dense: bool) -> None:
    """`pm.ranges` by prefix counts over the cells (`dense`) and by binary
    search both give each window the panes of its key in [first, last]."""
    rng = np.random.default_rng(seed)
    kid = np.sort(rng.integers(0, keys, 40))
    q = rng.integers(-20, 20, 40)
    order = np.lexsort((q, kid))
    kid, q = kid[order], q[order]
    wkid = rng.integers(0, keys + 1, 30)  # the last key id has no panes
    first = rng.integers(-30, 30, 30)
    last = first + rng.integers(0, 12, 30)
    factor, slack = (pm.DENSE_FACTOR, pm.DENSE_SLACK)
    try:
        pm.DENSE_FACTOR, pm.DENSE_SLACK = (10**6, 10**6) if dense else (0, 0)
        i0, i1 = pm.ranges(kid, q, wkid, first, last)
    finally:
        pm.DENSE_FACTOR, pm.DENSE_SLACK = factor, slack
    for w in range(len(wkid)):
        want = np.flatnonzero((kid == wkid[w]) & (q >= first[w]) & (q <= last[w]))
        got = np.arange(i0[w], i1[w])
        if len(want) == 0:
            assert i1[w] <= i0[w] or not len(got)
        else:
            assert list(got) == list(want), (w, got, want)
