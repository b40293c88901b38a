"""`merge_rows` (`wid.kernels.extents`): held partials merged per key,
in two steps as an engine merges them across micro-batches, against the
oracle's aggregate of each key's rows (`wid.semantics.aggregate_values`).
Keys held by one row skip the merges; keys held by several go through them:
the draws mix both, with integer keys (value codes) and string keys
(dictionary codes)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.spark.compare import same_value
from tests.strategies import aggregations
from wid.kernels.extents import merge_rows, row_partials
from wid.kernels.fields import fields_of
from wid.kernels.tables import TS, concat
from wid.kernels.vector_aggregates import vector_agg
from wid.semantics.aggregate_values import aggregate_value

# small binary fractions, as the other operator tests draw: exact in floating point, so the statistics'
# float arithmetic meets the oracle's exact arithmetic within tolerance (no underflow on subnormal spreads)
VALUES = st.one_of(st.none(), st.integers(-9, 9).map(float), st.integers(-400, 400).map(lambda x: x / 8))
ROWS = st.lists(st.tuples(st.integers(0, 6), VALUES, VALUES), min_size=1, max_size=30)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(agg=aggregations(), rows=ROWS, split=st.integers(0, 30), text_keys=st.booleans())
def test_merge_rows_in_two_steps_equals_the_oracle_per_key(agg: Any, rows: list[tuple[int, Any, Any]], split: int,
                                                           text_keys: bool) -> None:
    keys = [f"k{k}" if text_keys else k for k, _, _ in rows]
    table = pa.table({"k": keys, TS: list(range(len(rows))), "v": [v for _, v, _ in rows],
                      "w": [w for _, _, w in rows]}, schema=pa.schema(
        [("k", pa.string() if text_keys else pa.int32()), (TS, pa.int64()), ("v", pa.float64()),
         ("w", pa.float64())]))
    va = vector_agg(agg.agg, agg.column, agg.column2, None, agg.percent, agg.max_distinct_values_per_group, agg.as_)
    partials = row_partials([va], table, table.select(["k"]))
    held = merge_rows([va], partials.slice(0, split), ["k"])
    merged = merge_rows([va], concat([held, partials.slice(split)]), ["k"])
    assert merged.num_rows == len(set(keys))
    got = dict(zip(merged.column("k").to_pylist(), va.finish(fields_of(merged, 0)).to_pylist(), strict=True))
    for key in set(keys):
        mine = [{"ts": i, "v": v, "w": w} for i, (k, v, w) in enumerate(rows) if keys[i] == key]
        want = aggregate_value(agg, mine, lambda r: r["ts"])
        assert same_value(agg.agg, agg.mode, got[key], want), (key, got[key], want)
