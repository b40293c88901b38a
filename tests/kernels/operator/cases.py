"""Random time-window specs and streams for the WID operator's shards, and
comparing shard results with the streaming oracle's, micro-batch by
micro-batch (shared by the shard, state-cache and Spark stream tests)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from tests.kernels.operator.harness import micro_batches
from tests.spark.compare import same_value
from tests.strategies import aggregations
from wid import Aggregation, Window
from wid.semantics.stream_oracle import BatchResult, MicroBatch

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


# a tumbling window of 10 ms per key, whose hot key shows combining before the shuffle (`hot_key_batches`)
HOT_WINDOW = Window.tumbling(10, event_time_column="ts", event_time_unit="ms", group_by=["k"], lateness_ms=0,
                             max_groups_per_window=100,
                             aggregations=[Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"),
                                           Aggregation("max", "v", as_="top"), Aggregation("last", "w", as_="w")])


def hot_key_batches() -> list[MicroBatch]:
    """Three micro-batches in `SCHEMA`: key ``hot`` holds 300 of each
    batch's 330 rows, spread over 3 panes of `HOT_WINDOW`; ``k0``-``k9`` hold
    3 rows each. Batch 2 also brings 20 hot rows behind the watermark (late)."""
    rng = random.Random(7)
    batches = []
    for b in range(3):
        base = 100 * b
        rows = [{"k": "hot", "ts": base + rng.randrange(30), "v": float(rng.randrange(9)), "w": rng.randrange(5)}
                for _ in range(300)]
        rows += [{"k": f"k{i}", "ts": base + rng.randrange(30), "v": 1.0, "w": 2} for i in range(10) for _ in range(3)]
        if b == 2:
            rows += [{"k": "hot", "ts": rng.randrange(20), "v": 5.0, "w": 3} for _ in range(20)]
        rng.shuffle(rows)
        batches.append(MicroBatch([("a", r) for r in rows], 7 * b))
    return batches
