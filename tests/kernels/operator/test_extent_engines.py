"""The WID operator's count, rolling and landmark engines (run without Spark,
over in-memory stores, 1 to 4 shards) against the streaming oracle, on
random specs and streams with disorder beyond the lateness, ties and random
micro-batch splits, for every late-data policy; and against the batch
oracle once a final punctuation closes everything."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.operator.harness import LocalOperator, micro_batches
from tests.spark.compare import same_value
from tests.strategies import aggregations
from tests.transcript import is_punctuation
from wid import Aggregation, Punctuation, Window
from wid.semantics import evaluate
from wid.semantics.ranks import sql_sort_key
from wid.semantics.stream_oracle import BatchResult, Emission, MicroBatch, run_stream

SCHEMA = pa.schema([("k", pa.string()), ("g", pa.string()), ("ts", pa.int64()), ("v", pa.float64()),
                    ("w", pa.int64()), ("id", pa.int64()), ("punct", pa.bool_())])
KINDS = ("count", "rolling", "landmark")


@st.composite
def shapes(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    """Kind parameters and keys (count: partition_by and/or group_by, or none)."""
    if kind == "count":
        size, hop = draw(st.sampled_from([(3, 1), (3, 2), (4, 4), (2, 1), (5, 2), (1, 1)]))
        keys = draw(st.sampled_from([{}, {"partition_by": ("k",)}, {"group_by": ("k",)},
                                     {"partition_by": ("k",), "group_by": ("g",)}]))
        return {"size_rows": size, "hop_rows": hop, "rank_by": draw(st.sampled_from(["order", "arrival"])), **keys}
    keys = draw(st.sampled_from([(), ("k",), ("k", "g")]))
    if kind == "rolling":
        every = draw(st.sampled_from([None, None, 2, 3]))
        return {"duration_ms": draw(st.sampled_from([1, 7, 25])), "every_rows": every, "group_by": keys,
                "rank_by": draw(st.sampled_from(["order", "arrival"])) if every else "order"}
    return {"hop_ms": draw(st.sampled_from([5, 10])), "landmark_ms": -30,
            "max_duration_ms": draw(st.sampled_from([None, 20, 30])), "group_by": keys}


@st.composite
def specs(draw: st.DrawFn, kinds: tuple[str, ...] = KINDS) -> Window:
    kind = draw(st.sampled_from(kinds))
    shape = draw(shapes(kind))
    ranked = kind == "count" or (kind == "rolling" and shape["every_rows"])
    order_ranked = ranked and shape["rank_by"] == "order"
    policy = draw(st.sampled_from(["drop", "dlq"] if order_ranked or kind == "count" else ["drop", "dlq", "reopen"]))
    emit = "on_close" if kind == "rolling" and order_ranked else draw(st.sampled_from(["on_close", "on_update"]))
    aggs = [draw(aggregations(("v", "w"), alias=f"a{i}")) for i in range(draw(st.integers(1, 3)))]
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", aggregations=tuple(aggs),
                  lateness_ms=draw(st.sampled_from([0, 5, 12])), late_data=policy,
                  allowed_lateness_ms=draw(st.sampled_from([4, 25])) if policy == "reopen" else None,
                  late_mode=draw(st.sampled_from(["generous", "consistent"])), emit=emit,
                  tie_breaker="id" if kind != "landmark" and draw(st.booleans()) else None,
                  max_groups_per_window=1000, punctuation=Punctuation("punct"), **shape)


@st.composite
def streams(draw: st.DrawFn) -> list[MicroBatch]:
    n = draw(st.integers(0, 40))
    rng = random.Random(draw(st.integers(0, 2**32)))
    rows = [{"k": rng.choice("abc"), "g": rng.choice("xy"), "ts": (i * 2 + rng.randrange(4) - 30) // 2,
             "v": rng.choice([None, float(rng.randrange(-9, 9))]), "w": rng.choice([None, rng.randrange(0, 5)]),
             "id": i} for i in range(n)]
    return micro_batches(rows, rng, draw(st.integers(0, 5)), draw(st.sampled_from([0, 10, 60])))


def _exact(window: Window, e: Emission) -> tuple[Any, ...]:
    aliases = {a.as_ for a in window.aggregations}
    return (e.final, e.retract, *(sql_sort_key(v) for k, v in sorted(e.row.items()) if k not in aliases))


def assert_same_emissions(window: Window, got: list[Emission], want: list[Emission], where: str) -> None:
    assert len(got) == len(want), f"{where}: {len(got)} emissions, the oracle has {len(want)}"
    for a, b in zip(sorted(got, key=lambda e: _exact(window, e)), sorted(want, key=lambda e: _exact(window, e)),
                    strict=True):
        assert _exact(window, a) == _exact(window, b), f"{where}:\n operator {a}\n oracle   {b}"
        for agg in window.aggregations if not b.retract else ():  # a retraction is a natural key alone
            assert same_value(agg.agg, agg.mode, a.row[agg.as_], b.row[agg.as_]), (
                f"{where} {agg}: {a.row[agg.as_]!r} != {b.row[agg.as_]!r}")


def _late(r: Any) -> str:
    return repr([(c, r.row.get(c)) for c in SCHEMA.names if c != "punct"])


def assert_same_results(window: Window, got: list[BatchResult], want: list[BatchResult]) -> None:
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.watermark_us == w.watermark_us, f"batch {i}"
        assert (g.rows_late_dropped, g.rows_in, g.rows_aggregated) == (
            w.rows_late_dropped, w.rows_in, w.rows_aggregated), f"batch {i}"
        assert g.rows_in == g.rows_rejected + g.rows_late_dropped + g.rows_late_dlq + g.rows_aggregated
        assert sorted(map(_late, g.late)) == sorted(map(_late, w.late)), f"batch {i}"
        assert_same_emissions(window, g.emitted, w.emitted, f"batch {i}")


def full(batches: list[MicroBatch]) -> list[MicroBatch]:
    """Rows with every column of `SCHEMA` (the operator's rows carry them all)."""
    return [MicroBatch([(s, {c: r.get(c) for c in SCHEMA.names}) for s, r in b.rows], b.batch_ms)
            for b in batches]


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=specs(), batches=streams(), shards=st.integers(1, 4))
def test_shards_equal_the_streaming_oracle(window: Window, batches: list[MicroBatch], shards: int) -> None:
    batches = full(batches)
    got = LocalOperator(window, SCHEMA, shards, is_punctuation).run(batches)
    assert_same_results(window, got, run_stream(batches, window, is_punctuation))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=specs(), batches=streams(), shards=st.integers(1, 4), data=st.data())
def test_closed_by_a_punctuation_the_stream_equals_batch(window: Window, batches: list[MicroBatch], shards: int,
                                                         data: st.DataObject) -> None:
    # lateness beyond the disorder: nothing is late; a final punctuation closes what batch emits
    from tests.semantics.test_stream_extents import flush_ms

    closed: dict[str, Any] = {"lateness_ms": 100, "late_data": "drop", "allowed_lateness_ms": None, "emit": "on_close"}
    window = dataclasses.replace(window, **closed, **({} if window.kind == "landmark" else {"rank_by": "order"}))
    batches = full(batches)
    rows = [r for b in batches for _, r in b.rows]
    flush = MicroBatch([(s, {"ts": flush_ms(window, rows), "punct": True}) for s in "ab"], 99)  # every source
    got = LocalOperator(window, SCHEMA, shards, is_punctuation).run([*batches, flush])
    assert all(r.rows_late_dropped == 0 and not r.late for r in got)
    final = [e for r in got for e in r.emitted if e.final]
    want = [Emission(r) for r in evaluate(rows, window).rows]
    assert_same_emissions(window, final, want, "batch")


def _steady(kind: str, copies: int = 1, **shape: Any) -> tuple[Window, list[MicroBatch]]:
    """One key, `copies` rows every 1 ms (all at that ms) for 600 ms, 20 ms
    a micro-batch, shuffled inside it (disorder up to 20 ms), lateness 5 ms."""
    rng = random.Random(5)
    rows = [{"k": "a", "g": "x", "ts": t, "v": float(i % 7), "w": 1, "id": i, "punct": None}
            for t in range(600) for i in range(t * copies, (t + 1) * copies)]
    batches = []
    for i in range(0, len(rows), 20 * copies):
        part = rows[i:i + 20 * copies]
        rng.shuffle(part)
        batches.append(MicroBatch([("a", r) for r in part], i))
    w = Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), lateness_ms=5,
               aggregations=(Aggregation("sum", "v", as_="s"),), max_groups_per_window=10, **shape)
    return w, batches


@pytest.mark.parametrize(("kind", "shape", "copies", "bound"), [
    # rolling 50 ms: bins of the last 50 ms (one per distinct ms) + rows not yet closed (the batch's 20 + 5 ms)
    ("rolling", {"duration_ms": 50}, 1, 50 + 25 + 5),
    # four rows at every ms: still one bin per distinct ms (ties merge), four times the rows not yet closed
    ("rolling", {"duration_ms": 50}, 4, 50 + 4 * 25 + 5),
    # landmark, unbounded: one running prefix + the panes of the open windows (lateness 5 ms, hop 10 ms)
    ("landmark", {"hop_ms": 10, "landmark_ms": 0}, 1, 1 + 4),
    # count 40 rows every 10: panes of 10 ranks of the next window (4) + pending rows (batch + disorder)
    ("count", {"size_rows": 40, "hop_rows": 10}, 1, 4 + 25 + 5),
])
def test_state_stays_bounded_on_a_long_stream(kind: str, shape: dict[str, Any], copies: int, bound: int) -> None:
    w, batches = _steady(kind, copies, **shape)
    operator = LocalOperator(w, SCHEMA, 1)
    got = operator.run(batches)
    assert sum(len(r.emitted) for r in got) > 25  # it did emit all along
    assert max(operator.held) <= bound, operator.held
    assert_same_results(w, got, run_stream(batches, w))
