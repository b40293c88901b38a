"""The time engine of the WID operator (tumbling and hopping windows):
what it writes to the state store, late rows against one closing point,
and its emission in chunks of whole groups."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kernels.operator.cases import SCHEMA, assert_same_results
from tests.kernels.operator.harness import LocalOperator
from tests.kernels.operator.test_extent_engines import (
    assert_same_results as assert_same_extent_results,
)
from wid import Aggregation, Window
from wid.kernels.operator import time_engine
from wid.kernels.operator.shard import MemoryStore
from wid.kernels.operator.time_engine import TimeEngine, key_runs
from wid.kernels.tables import TS
from wid.kernels.vector_aggregates import CapError
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.spark.operator.query import operator_spec

# -- what the time engine writes to the state store ----------------------------------



class RecordingStore(MemoryStore):
    """A `MemoryStore` that records the panes put and deleted."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[int] = []
        self.deletes: list[int] = []

    def put_pane(self, pane: int, blob: bytes) -> None:
        self.puts.append(pane)
        super().put_pane(pane, blob)

    def delete_pane(self, pane: int) -> None:
        self.deletes.append(pane)
        super().delete_pane(pane)


def test_panes_opened_and_closed_in_one_batch_never_reach_the_store() -> None:
    """Every put or delete is a round trip to Spark's state server: a
    micro-batch over 120 one-minute panes that closes all but the last
    writes that one pane only; the next batch, closing it, deletes it."""
    minute = 60_000
    window = Window(kind="tumbling", event_time_column="ts", event_time_unit="ms", group_by=("k",),
                    aggregations=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")), duration_ms=minute, lateness_ms=0)
    rows = [{"k": "a", "ts": t, "v": 1.0, "w": 1} for t in range(0, 120 * minute, minute // 2)]
    batches = [MicroBatch([("a", r) for r in rows], 0),
               MicroBatch([("a", {"k": "a", "ts": 125 * minute, "v": 1.0, "w": 1})], 7)]
    operator = LocalOperator(window, SCHEMA, shards=1)
    store = operator.stores[0] = RecordingStore()
    got = [operator.step(batches[0])]
    assert (store.puts, store.deletes, sorted(store.panes)) == ([119], [], [119])
    got.append(operator.step(batches[1]))
    assert (store.puts, store.deletes, sorted(store.panes)) == ([119, 125], [119], [125])
    assert_same_results(window, got, run_stream(batches, window))


# -- late rows against one closing point -----------------------------------------



@settings(max_examples=200, deadline=None)
@given(duration=st.integers(1, 12), hop=st.integers(1, 12), origin=st.integers(0, 9),
       allowed=st.sampled_from([None, 0, 3, 17]), mode=st.sampled_from(["generous", "consistent"]),
       closing=st.integers(-40, 80), times=st.lists(st.integers(-60, 100), min_size=1, max_size=30))
def test_late_rows_against_one_closing_point_follow_the_per_row_rule(
        duration: int, hop: int, origin: int, allowed: int | None, mode: str, closing: int, times: list[int]) -> None:
    """With one closing point for every row (no keyed punctuation) the time
    engine compares event times with one bound instead of working out each
    row's windows; both must agree with the rule of Li et al. as written
    (late: its last window, or under consistent its first, has
    ``end + allowed <= closing``)."""
    kind = "hopping" if hop < duration else "tumbling"
    window = Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",),
                    aggregations=(Aggregation("count", as_="n"),), duration_ms=duration,
                    hop_ms=hop if kind == "hopping" else None, origin_ms=origin, late_mode=mode,
                    late_data="reopen" if allowed is not None else "drop", allowed_lateness_ms=allowed)
    engine = TimeEngine(operator_spec(window, pipeline="t", shards=1), MemoryStore())
    rows = pa.table({TS: pa.array([t * 1000 for t in times], pa.int64())})
    got = engine.late(rows, np.full(len(times), closing * 1000, dtype=np.int64))
    step = hop if kind == "hopping" else duration
    want = []
    for t in times:
        starts = (origin + j * step for j in range((t - origin - duration) // step - 1, (t - origin) // step + 2))
        ends = [s + duration for s in starts if s <= t < s + duration]
        end = max(ends) if mode == "generous" else min(ends)
        want.append(end + (allowed or 0) <= closing)
    assert got.tolist() == want


# -- the time engine's emission in chunks -------------------------------------------



@settings(max_examples=300, deadline=None)
@given(groups=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6), max_size=30), limit=st.integers(1, 20))
def test_key_runs_cut_between_groups_only_and_weigh_at_most_the_limit(groups: list[list[int]], limit: int) -> None:
    """`groups`: the weights of each group's rows."""
    kid = np.repeat(np.arange(len(groups)), [len(g) for g in groups]).astype(np.int64)
    weight = np.array([w for g in groups for w in g], dtype=np.int64)
    runs = list(key_runs(kid, weight, limit))
    edges = [0, *[hi for _, hi in runs]]
    assert [lo for lo, _ in runs] == edges[:-1] and edges[-1] == len(kid)
    for lo, hi in runs:
        assert hi > lo and (lo == 0 or kid[lo] != kid[lo - 1]) and (hi == len(kid) or kid[hi] != kid[hi - 1])
        assert weight[lo:hi].sum() <= limit or kid[lo] == kid[hi - 1], (lo, hi)  # more only for one group alone
        assert hi == len(kid) or weight[lo:hi].sum() + weight[kid == kid[hi]].sum() > limit  # the next did not fit


def hourly_hopping(keys: int) -> tuple[Window, list[MicroBatch]]:
    """Hopping 60/1 ms over 120 ms of rows (one a ms) for `keys` groups: a
    micro-batch of them, and one row that closes every window."""
    window = Window(kind="hopping", event_time_column="ts", event_time_unit="ms", group_by=("k",),
                    aggregations=(Aggregation("count", as_="n"), Aggregation("max", "v", as_="m")),
                    duration_ms=60, hop_ms=1, lateness_ms=0)
    rows = [{"k": f"k{i}", "ts": t, "v": float(t % 7), "w": 1} for t in range(120) for i in range(keys)]
    return window, [MicroBatch([("a", r) for r in rows], 0), MicroBatch([("a", {**rows[0], "ts": 400})], 7)]


def test_a_micro_batch_emits_its_windows_in_chunks_of_whole_groups() -> None:
    """With room for 400 windows a chunk: the first micro-batch emits over
    panes 0-118 of each group (its windows ending by 119 ms), 178 windows
    a group, two groups a chunk; the second over panes 60-119 (the rest
    were evicted), 119 windows a group, three groups a chunk. The
    emission's memory is bounded by a chunk, not by the windows a
    micro-batch closes. Together the chunks equal the oracle's windows."""
    window, batches = hourly_hopping(keys=20)
    operator = LocalOperator(window, SCHEMA, shards=1)
    with mock.patch.object(time_engine, "EMIT_WINDOWS", 400):
        got = operator.run(batches)
    assert_same_results(window, got, run_stream(batches, window))
    first, second = ([len(set(t.column("k").to_pylist())) for t in batch] for batch in operator.window_tables)
    assert (first, second) == ([2] * 10, [3] * 6 + [2])
    for batch in operator.window_tables:
        assert len(set().union(*(t.column("k").to_pylist() for t in batch))) == 20


def test_the_cap_counts_a_windows_groups_over_every_chunk() -> None:
    """Hopping 60/1 s; group i has one row, at 3i s: a pane holds one group
    (under the cap of 5 when added), a window up to 20. With one group a
    chunk they pass the cap only counted over the chunks; with the groups
    emitted in order, the first window past it is ``[-44 s, 16 s)`` (six
    groups)."""
    window = Window(kind="hopping", event_time_column="ts", event_time_unit="ms", group_by=("k",),
                    aggregations=(Aggregation("count", as_="n"),), duration_ms=60_000, hop_ms=1_000, lateness_ms=0,
                    max_groups_per_window=5)
    rows = [{"k": f"k{i:02}", "ts": 3_000 * i, "v": 1.0, "w": 1} for i in range(20)]
    batches = [MicroBatch([("a", r) for r in rows], 0), MicroBatch([("a", {**rows[0], "ts": 400_000})], 7)]
    with mock.patch.object(time_engine, "EMIT_WINDOWS", 1), pytest.raises(
            CapError, match=r"=5 reached on window \[1969-12-31T23:59:16Z, 1970-01-01T00:00:16Z\) for pipeline test$"):
        LocalOperator(window, SCHEMA, shards=1).run(batches)


@pytest.mark.parametrize("emit", ["on_close", "on_update"])
@pytest.mark.parametrize("agg", ["sum", "med"])
def test_windows_without_group_by_take_rows_into_a_pane_twice(emit: str, agg: str) -> None:
    """No group columns: a pane's table has no key columns (and so no row
    count of its own), and still merges a second micro-batch's rows."""
    window = Window(kind="hopping", duration_ms=20, hop_ms=10, event_time_column="ts", event_time_unit="ms",
                    aggregations=(Aggregation(agg, "v", as_="x"),), emit=emit, late_data="reopen",
                    allowed_lateness_ms=30, max_groups_per_window=10)
    rows = [{"k": "a", "ts": t, "v": float(t), "w": 1} for t in (1, 5, 12, 3, 25, 14)]
    batches = [MicroBatch([("a", r) for r in rows[i:i + 2]], 7 * i) for i in range(0, 6, 2)]
    got = LocalOperator(window, SCHEMA, 1).run(batches)
    assert_same_extent_results(window, got, run_stream(batches, window))
