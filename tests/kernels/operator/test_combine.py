"""Combining before the shuffle (`wid.kernels.operator.combine`): rows of one
(group, pane) inside one input partition reach their shard as one partial,
and the shards' windows, late rows and counts stay the streaming oracle's.
Run without Spark: the shards over in-memory stores, rows packed per input
partition by `pack` as Spark's plan packs them (tests/kernels/operator/harness.py)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.operator.cases import HOT_WINDOW, SCHEMA, assert_same_results, hot_key_batches
from tests.kernels.operator.harness import LocalOperator, micro_batches
from tests.kernels.operator.test_calendar_engines import cases as calendar_cases
from tests.kernels.operator.test_extent_engines import SCHEMA as CALENDAR_SCHEMA
from tests.kernels.operator.test_extent_engines import assert_same_results as assert_same_extents
from tests.strategies import aggregations
from tests.transcript import Transcript, all_transcripts, is_punctuation, schema_of
from wid import Aggregation, Window
from wid.kernels.operator.combine import combined, combines
from wid.kernels.operator.packing import SHARD
from wid.kernels.tables import PUNCT, REASON, ROWS, TS
from wid.semantics.stream_oracle import BatchResult, MicroBatch, run_stream
from wid.spark.operator.query import operator_spec

TRANSCRIPTS = all_transcripts()


def _counts_hold(op: LocalOperator, got: list[BatchResult], want: list[BatchResult]) -> None:
    """The shards' own counts (the rows their partials stand for) give the
    oracle's accounting, micro-batch by micro-batch: rows_in = rejected +
    late dropped + late to the dead letter + aggregated."""
    for i, (stats, g, w) in enumerate(zip(op.stats, got, want, strict=True)):
        total = {k: sum(s[k] for s in stats) for k in ("rows", "aggregated", "late_dropped", "late_dlq")}
        assert total["rows"] + len(g.rejected) == w.rows_in, f"batch {i}"
        assert total["aggregated"] == w.rows_aggregated, f"batch {i}"
        assert (total["late_dropped"], total["late_dlq"]) == (w.rows_late_dropped, len(w.late)), f"batch {i}"
        assert total["rows"] == total["aggregated"] + total["late_dropped"] + total["late_dlq"], f"batch {i}"


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.name for t in TRANSCRIPTS])
def test_every_transcript_replays_with_rows_combined_in_three_input_partitions(transcript: Transcript) -> None:
    # time windows combine; the other kinds, dlq and punctuation rows ship rows: each transcript's answer stands
    operator = LocalOperator(transcript.window, schema_of(transcript), 2, is_punctuation, partitions=3)
    transcript.check(operator.run(transcript.batches))


def test_a_hot_key_reaches_its_shard_as_at_most_one_partial_per_partition_and_pane() -> None:
    #   panes of 10 ms; batch b's rows in [100b, 100b + 30): the hot key's rows fall in 3 panes a batch
    #   3 input partitions  ─ pack ─►  at most 3 x 3 hot partials (+ the few keys' partials) on its shard
    window, batches = HOT_WINDOW, hot_key_batches()
    op = LocalOperator(window, SCHEMA, shards=4, partitions=3)
    got, want = op.run(batches), run_stream(batches, window)
    assert_same_results(window, got, want)
    _counts_hold(op, got, want)
    assert sum(w.rows_late_dropped for w in want) == 20  # the late hot rows, counted one by one
    for b, stats in enumerate(op.stats):
        hot = max(stats, key=lambda s: s["rows"])  # the hot key's shard: its 300 (320) rows
        assert hot["rows"] >= 300
        panes = {(r["k"], r["ts"] // 10) for _, r in batches[b].rows if hash(("hot",)) % 4 == hash((r["k"],)) % 4}
        assert hot["received"] <= 3 * len(panes) < hot["rows"] / 5, f"batch {b}: {hot}"
        assert sum(s["received"] for s in stats) < sum(s["rows"] for s in stats) / 5


def test_combining_keeps_rejected_and_punctuation_rows_and_counts_each_partials_rows() -> None:
    window = Window.hopping(10, 5, event_time_column="ts", event_time_unit="ms", group_by=["k"],
                            max_groups_per_window=100, aggregations=[Aggregation("avg", "v", as_="m")])
    spec = operator_spec(window, pipeline="test", shards=2, input_columns=tuple(SCHEMA.names))
    rows = pa.table({"k": ["a", "a", "a", "b", "a", "a"], "v": [1.0, 2.0, None, 4.0, 9.0, 3.0],
                     TS: [1000, 2000, 4000, 3000, None, 6000], PUNCT: [False, False, False, False, False, True],
                     REASON: [None, None, None, None, "null event time", None], SHARD: [0, 0, 0, 1, 0, 0]})
    out = combined(spec, rows, carried=(SHARD,))
    partials = out.filter(pa.array(np.asarray(out.column(ROWS).is_valid())))
    #   panes of 5 ms: a@1,2,4 ─► one partial of 3 rows in pane 0; b@3 ─► one of 1 row
    assert sorted(zip(partials.column("k").to_pylist(), partials.column(ROWS).to_pylist(),
                      partials.column(SHARD).to_pylist(), strict=True)) == [("a", 3, 0), ("b", 1, 1)]
    assert partials.column(PUNCT).to_pylist() == [False, False]
    kept = out.filter(pa.array(~np.asarray(out.column(ROWS).is_valid())))
    assert kept.column(REASON).to_pylist() == ["null event time", None]  # the rejected row, the punctuation
    assert kept.column(PUNCT).to_pylist() == [False, True]


@pytest.mark.parametrize(("changes", "expected"), [({}, True), ({"late_data": "reopen", "allowed_lateness_ms": 5}, True),
                                                   ({"late_data": "dlq"}, False)])
def test_time_windows_combine_unless_late_rows_go_to_the_dead_letter(changes: dict[str, Any], expected: bool) -> None:
    window = Window.tumbling(10, event_time_column="ts", group_by=["k"], max_groups_per_window=10,
                             aggregations=[Aggregation("count", as_="n")], **changes)
    assert combines(operator_spec(window, pipeline="t", shards=1)) is expected
    session = Window.session(10, event_time_column="ts", group_by=["k"], max_groups_per_window=10,
                             aggregations=[Aggregation("count", as_="n")])
    assert not combines(operator_spec(session, pipeline="t", shards=1))


ZIPF = [1.0 / (i + 1) ** 1.1 for i in range(12)]
KEYS = [None, *(f"k{i}" for i in range(11))]  # the hottest key is the null group


@st.composite
def skewed_streams(draw: st.DrawFn) -> list[MicroBatch]:
    """Up to 160 rows with keys drawn from Zipf(1.1) over 12 keys (the null
    group the hottest), disordered enough that some are late."""
    n = draw(st.integers(0, 160))
    rng = random.Random(draw(st.integers(0, 2**32)))
    keys = rng.choices(KEYS, weights=ZIPF, k=n)
    rows = [{"k": k, "ts": i // 2 + rng.randrange(4) - 20, "v": rng.choice([None, float(rng.randrange(-9, 9))]),
             "w": rng.choice([None, rng.randrange(0, 5)])} for i, k in enumerate(keys)]
    return micro_batches(rows, rng, draw(st.integers(0, 4)), draw(st.sampled_from([0, 10, 40])))


@st.composite
def time_windows(draw: st.DrawFn) -> Window:
    """Tumbling or hopping windows, dropping late rows or reopening windows."""
    duration = draw(st.sampled_from([10, 20, 30]))
    shape: dict[str, Any] = {"duration_ms": duration}
    if draw(st.booleans()):
        shape["hop_ms"] = draw(st.sampled_from([h for h in (5, 10, 15) if h <= duration]))
    policy = draw(st.sampled_from(["drop", "reopen"]))
    aggs = [draw(aggregations(("v", "w"), alias=f"a{i}")) for i in range(draw(st.integers(1, 3)))]
    return Window(kind="hopping" if "hop_ms" in shape else "tumbling", event_time_column="ts", event_time_unit="ms",
                  group_by=("k",), aggregations=tuple(aggs), lateness_ms=draw(st.sampled_from([0, 5, 12])),
                  late_data=policy, allowed_lateness_ms=draw(st.sampled_from([4, 25])) if policy == "reopen" else None,
                  late_mode=draw(st.sampled_from(["generous", "consistent"])),
                  emit=draw(st.sampled_from(["on_close", "on_update"])), origin_ms=draw(st.sampled_from([0, 3])),
                  max_groups_per_window=100, **shape)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=time_windows(), batches=skewed_streams(), shards=st.integers(1, 3), partitions=st.integers(1, 4))
def test_skewed_keys_combined_equal_the_oracle(window: Window, batches: list[MicroBatch], shards: int,
                                               partitions: int) -> None:
    op = LocalOperator(window, SCHEMA, shards, partitions=partitions)
    got, want = op.run(batches), run_stream(batches, window)
    assert_same_results(window, got, want)
    _counts_hold(op, got, want)
    received = sum(s["received"] for batch in op.stats for s in batch)
    assert received <= sum(len(b.rows) for b in batches)  # never more than the rows: partials replace them


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=calendar_cases(), shards=st.integers(1, 3), partitions=st.integers(1, 3))
def test_calendar_windows_combined_equal_the_oracle(case: tuple[Window, list[MicroBatch]], shards: int,
                                                    partitions: int) -> None:
    # local days, weeks, months and hours across time-zone changes, with and without group columns, global
    # punctuations among the rows (`tests/kernels/operator/test_calendar_engines.py`)
    window, batches = case
    op = LocalOperator(window, CALENDAR_SCHEMA, shards, is_punctuation, partitions=partitions)
    got, want = op.run(batches), run_stream(batches, window, is_punctuation)
    assert_same_extents(window, got, want)
    _counts_hold(op, got, want)
