"""The WID operator's shard engines (run without Spark, over in-memory
stores) against the hand-worked transcripts and the streaming oracle."""

from __future__ import annotations

import pytest

from tests.spark.operator.harness import LocalOperator, micro_batches
from tests.transcript import Transcript, all_transcripts, is_punctuation, schema_of
from wid.spark.operator.engines import KINDS

TRANSCRIPTS = [t for t in all_transcripts() if t.window.kind in KINDS]


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.name for t in TRANSCRIPTS])
@pytest.mark.parametrize("shards", [1, 3])
def test_shards_replay_every_transcript(transcript: Transcript, shards: int) -> None:
    operator = LocalOperator(transcript.window, schema_of(transcript), shards, is_punctuation)
    transcript.check(operator.run(transcript.batches))


# -- against the streaming oracle on random specs and streams ------------------------

import random  # noqa: E402
from typing import Any  # noqa: E402
from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.spark.compare import same_value  # noqa: E402
from tests.strategies import aggregations  # noqa: E402
from wid import Window  # noqa: E402
from wid.semantics.stream_oracle import BatchResult, MicroBatch, run_stream  # noqa: E402
from wid.spark.operator import time_engine  # noqa: E402

SCHEMA = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.float64()), ("w", pa.int64())])


@st.composite
def specs(draw: st.DrawFn) -> Window:
    kind = draw(st.sampled_from(["tumbling", "hopping", "session"]))
    shape: dict[str, Any] = {"duration_ms": draw(st.sampled_from([10, 20, 30]))}
    if kind == "hopping":
        shape["hop_ms"] = draw(st.sampled_from([d for d in (5, 10, 15, 20) if d <= shape["duration_ms"]]))
    if kind == "session":
        shape = draw(st.sampled_from([{"gap_ms": 3}, {"gap_ms": 8}, {"gap_column": "w"}]))
    policy = draw(st.sampled_from(["drop", "dlq", "reopen"]))
    aggs = [draw(aggregations(("v", "w"), alias=f"a{i}")) for i in range(draw(st.integers(1, 3)))]
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=tuple(aggs),
                  lateness_ms=draw(st.sampled_from([0, 5, 12])), late_data=policy,
                  allowed_lateness_ms=draw(st.sampled_from([4, 25])) if policy == "reopen" else None,
                  late_mode=draw(st.sampled_from(["generous", "consistent"])),
                  emit=draw(st.sampled_from(["on_close", "on_update"])),
                  origin_ms=draw(st.sampled_from([0, 3])) if kind != "session" else 0,
                  max_groups_per_window=100, **shape)


@st.composite
def streams(draw: st.DrawFn) -> list[MicroBatch]:
    n = draw(st.integers(0, 40))
    rng = random.Random(draw(st.integers(0, 2**32)))
    rows = [{"k": rng.choice("abc"), "ts": i * 2 + rng.randrange(4) - 30,
             "v": rng.choice([None, float(rng.randrange(-9, 9))]), "w": rng.choice([None, rng.randrange(0, 5)])}
            for i in range(n)]
    return micro_batches(rows, rng, draw(st.integers(0, 5)), draw(st.sampled_from([0, 10, 60])))


def _key(window: Window, e: Any) -> tuple[Any, ...]:
    return (e.retract, e.final, e.row[window.window_start_column], e.row["k"])


def assert_same_results(window: Window, got: list[BatchResult], want: list[BatchResult]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.watermark_us == w.watermark_us, f"batch {i}"
        assert (g.rows_late_dropped, g.rows_in, g.rows_aggregated) == (
            w.rows_late_dropped, w.rows_in, w.rows_aggregated), f"batch {i}"
        assert sorted(repr(sorted(r.row.items())) for r in g.late) == sorted(
            repr(sorted(r.row.items())) for r in w.late), f"batch {i}"
        assert len(g.emitted) == len(w.emitted), f"batch {i}: {len(g.emitted)} != {len(w.emitted)}"
        for a, b in zip(sorted(g.emitted, key=lambda e: _key(window, e)),
                        sorted(w.emitted, key=lambda e: _key(window, e)), strict=True):
            assert _key(window, a) == _key(window, b), f"batch {i}"
            assert a.row[window.window_end_column] == b.row[window.window_end_column]
            for agg in window.aggregations:
                if not b.retract:
                    assert same_value(agg.agg, agg.mode, a.row[agg.as_], b.row[agg.as_]), (
                        f"batch {i} {agg}: {a.row[agg.as_]!r} != {b.row[agg.as_]!r}")


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=specs(), batches=streams(), shards=st.integers(1, 4), chunk=st.sampled_from([1, 5, 1 << 20]))
def test_shards_equal_the_oracle(window: Window, batches: list[MicroBatch], shards: int, chunk: int) -> None:
    """`chunk`: windows a chunk of the time engine's emission holds (one
    group a chunk, a few groups, everything at once)."""
    with mock.patch.object(time_engine, "EMIT_WINDOWS", chunk):
        got = LocalOperator(window, SCHEMA, shards).run(batches)
    assert_same_results(window, got, run_stream(batches, window))


# -- what the time engine writes to the state store ----------------------------------

from wid import Aggregation  # noqa: E402
from wid.spark.operator.shard import MemoryStore  # noqa: E402


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

from wid.spark.operator.plan import operator_spec  # noqa: E402
from wid.spark.operator.tables import TS  # noqa: E402
from wid.spark.operator.time_engine import TimeEngine  # noqa: E402


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

from wid.aggregates.vector import CapError  # noqa: E402
from wid.spark.operator.time_engine import key_runs  # noqa: E402


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
