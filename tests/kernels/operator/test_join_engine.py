"""The WID operator's window-join engine (run without Spark, over in-memory
stores, 1 to 4 shards) against the streaming oracle, micro-batch by
micro-batch: every metric kind, windows a < 0 < b, 0 <= a <= b,
a <= b <= 0 and (0, 0), with and without max_delayed_time, disorder on
both sides, small and large garbage_size, both late-data policies."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels.operator.join_harness import LocalJoin
from tests.spark.join_compare import assert_same_join
from wid.semantics.stream_types import BatchResult, MicroBatch
from wid.semantics.window_join_stream import run_join_stream
from wid.spec import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

LEFT = pa.schema([("t", pa.int64()), ("k", pa.string()), ("id", pa.int64()), ("note", pa.string())])
RIGHT = pa.schema([("t", pa.int64()), ("k", pa.string()), ("v", pa.float64()), ("w", pa.int64())])
METRICS = (Aggregation("count", as_="n"), Aggregation("count", "v", as_="nv"), Aggregation("sum", "v", as_="s"),
           Aggregation("sum2", "w", as_="s2"), Aggregation("avg", "v", as_="avg"),
           Aggregation("std", "v", as_="std"), Aggregation("var", "w", as_="var"),
           Aggregation("first", "v", as_="first"), Aggregation("last", "w", as_="last"),
           Aggregation("min", "v", as_="min"), Aggregation("max", "w", as_="max"),
           Aggregation("med", "v", as_="med"), Aggregation("percentile", "w", as_="p30", percent=30.0),
           Aggregation("corr", "v", as_="corr", column2="w"), Aggregation("covar", "v", as_="cov", column2="w"),
           Aggregation("beta", "v", as_="beta", column2="w"), Aggregation("wavg", "v", as_="wavg", column2="w"),
           Aggregation("wsum", "v", as_="wsum", column2="w"))
WINDOWS = [(-3, 2), (-5, 5), (0, 4), (2, 6), (-4, -1), (-3, 0), (0, 0)]


def stream(rng: random.Random, disorder: int) -> list[MicroBatch]:
    """Rows of both sides over 60 ms, keys A-C, shuffled by up to
    `disorder` ms (some NULL keys and values), cut into 1-8 micro-batches;
    left ids are unique, so tied left rows order the same in both engines."""
    rows: list[tuple[str, dict[str, Any]]] = []
    for i in range(rng.randrange(5, 40)):
        key = rng.choice(["A", "B", "C", "C", None if i % 17 == 16 else "A"])
        t = rng.randrange(60)
        if rng.random() < 0.4:
            rows.append(("left", {"t": t, "k": key, "id": i, "note": rng.choice([None, "x", "y"])}))
        else:
            rows.append(("right", {"t": t, "k": key, "v": rng.choice([None, -1.5, 0.0, 2.0, 3.25]),
                                   "w": rng.choice([None, 1, 2, 5])}))
    rows.sort(key=lambda r: r[1]["t"] + rng.randrange(disorder + 1))
    cuts = sorted(rng.sample(range(len(rows) + 1), min(len(rows) + 1, rng.randrange(0, 8))))
    bounds = [0, *cuts, len(rows)]
    return [MicroBatch(rows[a:b], i) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def assert_same(join: WindowJoin, got: list[BatchResult], want: list[BatchResult]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g.rows_in, g.rows_rejected, g.rows_late_dropped, g.rows_aggregated) == (
            w.rows_in, w.rows_rejected, w.rows_late_dropped, w.rows_aggregated), f"batch {i}"
        late = sorted((x.source, repr(sorted(x.row.items())), x.reason) for x in g.late)
        assert late == sorted((x.source, repr(sorted(x.row.items())), x.reason) for x in w.late), f"batch {i}"
        assert_same_join([e.row for e in g.emitted], [e.row for e in w.emitted], join)


@settings(max_examples=120, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(WINDOWS), st.sampled_from([0, 3, 20]),
       st.sampled_from([1, 2, 5000]), st.integers(1, 4), st.booleans())
def test_engine_equals_the_streaming_oracle(rng: random.Random, window: tuple[int, int], disorder: int,
                                            garbage: int, shards: int, values: bool) -> None:
    metrics = rng.sample(METRICS, rng.randrange(1, 6))
    if values:
        metrics.append(ColumnMetric("v", as_="vs"))
    delay = None if window == (0, 0) or rng.random() < 0.5 else rng.choice([1, 10])
    join = WindowJoin(window=window, metrics=tuple(metrics), matching_column="k", time_column="t", time_unit="ms",
                      max_delayed_time=delay, garbage_size=garbage, late_data=rng.choice(["drop", "dlq"]),
                      null_fill=rng.choice([{}, {"note": "-"}]))
    batches = stream(rng, disorder)
    want = run_join_stream(batches, join, left_columns=LEFT.names)
    got = LocalJoin(join, LEFT, RIGHT, shards=shards).run(batches)
    assert_same(join, got, want)


def test_every_metric_on_every_window_kind() -> None:
    """All metrics at once, each window, one long stream."""
    for window in WINDOWS:
        rng = random.Random(window[0] * 31 + window[1])
        join = WindowJoin(window=window, metrics=METRICS, matching_column="k", time_column="t", time_unit="ms")
        batches = stream(rng, 5) + [MicroBatch([("right", {"t": 1000, "k": k, "v": None, "w": None})
                                                for k in "ABC"], 99)]
        want = run_join_stream(batches, join, left_columns=LEFT.names)
        assert sum(len(r.emitted) for r in want) > 0
        assert_same(join, LocalJoin(join, LEFT, RIGHT).run(batches), want)


def test_state_stays_bounded_with_garbage_size() -> None:
    join = WindowJoin(window=(-20, 0), metrics=(Aggregation("sum", "v", as_="s"),), matching_column="k",
                      time_column="t", time_unit="ms", garbage_size=8)
    batches = [MicroBatch([("right", {"t": i * 5, "k": "A", "v": 1.0, "w": 1}),
                           ("left", {"t": i * 5 + 1, "k": "A", "id": i, "note": None})], i) for i in range(200)]
    local = LocalJoin(join, LEFT, RIGHT, shards=2)
    assert_same(join, local.run(batches), run_join_stream(batches, join, left_columns=LEFT.names))
    assert max(local.held) <= 8 + 5 + 2


def test_two_matching_columns_named_differently_and_value_metrics_alone() -> None:
    """matching_column (["k", "id_mod"], ["k", "g"]) and time_column
    ("t", "rt"): keys match across names; non-aggregate metrics only."""
    left = pa.schema([("t", pa.int64()), ("k", pa.string()), ("id_mod", pa.int64()), ("id", pa.int64())])
    right = pa.schema([("rt", pa.int64()), ("k", pa.string()), ("g", pa.int64()), ("v", pa.float64())])
    for window in ((-4, 3), (0, 0)):
        join = WindowJoin(window=window, metrics=(ColumnMetric("v", as_="vs"), ColumnMetric("g", as_="gs")),
                          matching_column=(["k", "id_mod"], ["k", "g"]), time_column=("t", "rt"), time_unit="ms",
                          garbage_size=3)
        rng = random.Random(5)
        batches = []
        for i in range(8):
            rows: list[tuple[str, dict[str, Any]]] = [
                ("left", {"t": i * 5 + rng.randrange(5), "k": rng.choice("AB"), "id_mod": j % 2, "id": i * 10 + j})
                for j in range(rng.randrange(3))]
            rows += [("right", {"rt": i * 5 + rng.randrange(6), "k": rng.choice("AB"), "g": rng.randrange(2),
                                "v": rng.choice([None, 1.0, 2.5])}) for _ in range(rng.randrange(4))]
            batches.append(MicroBatch(rows, i))
        want = run_join_stream(batches, join, left_columns=left.names)
        assert sum(len(r.emitted) for r in want) > 0
        assert_same(join, LocalJoin(join, left, right, shards=2).run(batches), want)
