"""The vectorised aggregators against the definitions (the oracle's
`aggregate_value`): rows -> partials -> merged in two levels (as panes and
state merge them) -> finished equals the value over the group's rows."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from wid.kernels.vector_aggregates import CapError, vector_agg
from wid.semantics.aggregate_values import aggregate_value
from wid.spec import Aggregation

CASES = [Aggregation("count", as_="a"), Aggregation("count", "x", as_="a"), Aggregation("sum", "x", as_="a"),
         Aggregation("sum", "i", as_="a"), Aggregation("sum2", "x", as_="a"), Aggregation("min", "s", as_="a"),
         Aggregation("max", "x", as_="a"), Aggregation("avg", "i", as_="a"), Aggregation("first", "x", as_="a"),
         Aggregation("last", "s", as_="a"), Aggregation("count_distinct", "i", as_="a"),
         Aggregation("count_distinct", "s", as_="a", mode="exact", max_distinct_values_per_group=100),
         Aggregation("var", "x", as_="a"), Aggregation("std", "i", as_="a"), Aggregation("covar", "x", as_="a", column2="y"),
         Aggregation("corr", "x", as_="a", column2="y"), Aggregation("beta", "x", as_="a", column2="y"),
         Aggregation("wavg", "x", as_="a", column2="y"), Aggregation("wsum", "x", as_="a", column2="y"), Aggregation("med", "x", as_="a"),
         Aggregation("percentile", "i", as_="a", percent=30.0)]


def _close(got: Any, want: Any) -> bool:
    if got is None or want is None:
        return got is None and want is None
    if isinstance(got, float) or isinstance(want, float):
        return bool(np.isclose(got, want, rtol=1e-9, atol=1e-9))
    return bool(got == want)


def _vec(agg: Aggregation, tie_breaker: str | None) -> Any:
    return vector_agg(agg.agg, agg.column, agg.column2, tie_breaker, agg.percent,
                      agg.max_distinct_values_per_group, agg.as_)


@pytest.mark.parametrize("agg", CASES, ids=[f"{a.agg}({a.column},{a.column2})" for a in CASES])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 60), tie=st.booleans())
def test_two_level_merge_equals_the_definition(agg: Aggregation, seed: int, n: int, tie: bool) -> None:
    rng = random.Random(seed)
    rows = [{"g": rng.randrange(4), "p": rng.randrange(3), "ts": rng.randrange(5), "b": rng.randrange(3),
             "x": rng.choice([None, rng.uniform(-5, 5), 1e6 + rng.random()]),
             "y": rng.choice([None, float(rng.randrange(-3, 4))]),
             "i": rng.choice([None, rng.randrange(-9, 9)]), "s": rng.choice([None, "a", "b", "cc"])} for _ in range(n)]
    table = pa.Table.from_pylist(rows, schema=pa.schema(
        [("g", pa.int64()), ("p", pa.int64()), ("ts", pa.int64()), ("b", pa.int64()), ("x", pa.float64()),
         ("y", pa.float64()), ("i", pa.int64()), ("s", pa.string())]))
    vec = _vec(agg, "b" if tie else None)
    parts = vec.rows(table, table.column("ts").combine_chunks())
    # level 1: (group, pane), as panes hold them; level 2: group, as a window merges its panes
    pairs = sorted({(r["g"], r["p"]) for r in rows})
    pair_id = np.array([pairs.index((r["g"], r["p"])) for r in rows])
    panes = vec.merge(parts, pair_id, len(pairs))
    groups = sorted({g for g, _ in pairs})
    merged = vec.merge(panes, np.array([groups.index(g) for g, _ in pairs]), len(groups))
    got = vec.finish(merged).to_pylist()
    for g, value in zip(groups, got, strict=True):
        mine = [r for r in rows if r["g"] == g]
        want = aggregate_value(agg, mine, lambda r: (r["ts"], r["b"] if tie else ()))
        assert _close(value, want), f"group {g}: {value!r} != {want!r}"


def test_exact_distinct_cap_fails_loudly_naming_the_window() -> None:
    agg = Aggregation("count_distinct", "i", as_="users", mode="exact", max_distinct_values_per_group=2)
    table = pa.table({"i": [1, 2, 3]})
    vec = _vec(agg, None)
    merged = vec.merge(vec.rows(table, pa.array([0, 0, 0])), np.zeros(3, dtype=np.int64), 1)
    with pytest.raises(CapError, match=r"max_distinct_values_per_group=2 reached by aggregation 'users'") as err:
        vec.finish(merged)
    assert err.value.index == 0


# -- merging partials: NumPy over dense ids against pyarrow's hash aggregation ---------

from wid.kernels.vector_aggregates import _hash_merge  # noqa: E402

TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64()]


def _fit(v: Any, type_: pa.DataType) -> Any:
    """`v` as a value of `type_`: floats for float types, integers in range
    (else NULL) for integer types."""
    if v is None or pa.types.is_floating(type_):
        return v if v is None else float(v)
    info = np.iinfo(type_.to_pandas_dtype())
    return int(v) if not isinstance(v, float) and info.min <= v <= info.max else None


@settings(max_examples=200, deadline=None)
@given(type_=st.sampled_from(TYPES), op=st.sampled_from(["sum", "min", "max"]), groups=st.integers(1, 6),
       values=st.lists(st.one_of(st.none(), st.integers(-128, 127), st.sampled_from([2**62, -2**62, 2**63 - 1]),
                                 st.floats(allow_infinity=True, allow_nan=True, width=32)), max_size=40),
       seed=st.integers(0, 2**32))
@example(type_=pa.float64(), op="min", groups=1, values=[float("nan"), 1.0], seed=0)
@example(type_=pa.float64(), op="max", groups=2, values=[float("nan"), float("nan"), 2.0, None], seed=5)
@example(type_=pa.int64(), op="sum", groups=1, values=[2**63 - 1, 2**63 - 1], seed=0)
@example(type_=pa.float64(), op="min", groups=1, values=[0, -0.0], seed=0)  # Arrow keeps the first of equal values
@example(type_=pa.float64(), op="max", groups=1, values=[-0.0, 0.0], seed=0)
def test_merge_by_group_id_equals_pyarrows_hash_aggregation(type_: pa.DataType, op: str, groups: int,
                                                            values: list[Any], seed: int) -> None:
    """Sums wrap and widen, NULLs are skipped, NaN is skipped by min/max
    unless a group holds nothing else, an empty group is NULL: whatever
    path `_hash_merge` takes, it gives what pyarrow's `group_by` gives."""
    col = pa.array([_fit(v, type_) for v in values], type_)
    rng = random.Random(seed)
    ids = np.array([rng.randrange(groups) for _ in values] + list(range(groups)), dtype=np.int64)
    col = pa.concat_arrays([col, pa.nulls(groups, type_)])  # every id occurs; some only with a NULL
    want = pa.table({"_id": ids, "x": col}).group_by("_id", use_threads=False).aggregate([("x", op)])
    want = want.sort_by("_id").column(f"x_{op}").combine_chunks()
    got = _hash_merge({"x": col}, {"x": op}, ids, groups)["x"]
    assert got.type == want.type
    assert [repr(v) for v in got.to_pylist()] == [repr(v) for v in want.to_pylist()]
