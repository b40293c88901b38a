"""Streams through the public API (`wid.window_result` on streaming
DataFrames) against the oracle and batch `aggregate`: within the lateness a
stream emits exactly the batch windows its watermark has closed, whatever
the micro-batch split; bad rows reach the dead letter; several sources
close windows on their slowest watermark; what no stream can run is named.
Late data, every policy and mode, is `tests/test_one_answer.py`'s.

Data is fed as K micro-batches: one JSON file per batch in a landing
directory, read with ``maxFilesPerTrigger = 1`` and the available-now
trigger, so batch boundaries are deterministic.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import wid
from tests.spark.compare import assert_same, collect
from wid import Aggregation, ConfigError, Window
from wid.pipelines.report import tally
from wid.semantics import evaluate
from wid.spark import stream_query
from wid.spark.compile import compile_window
from wid.spark.operator.query import windows_of
from wid.spark.operator.rows import COUNTS_ROW, STATS, of_kind

SCHEMA = "k string, ts long, v double"
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "v", as_="hi"),
        Aggregation("first", "v", as_="first_v"), Aggregation("avg", "v", as_="mean"))


def feed(spark: Any, root: Path, batches: list[list[dict[str, Any]]]) -> Any:
    """A streaming DataFrame reading one landing file per micro-batch."""
    land = root / "land"
    land.mkdir(parents=True)
    for i, batch in enumerate(batches):
        path = land / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in batch))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(land))


def start(result: Any, window: Window, checkpoint: str) -> tuple[list[dict[str, Any]], list[Any]]:
    """Run a compiled stream to its end; returns (window rows, per-batch tallies)."""
    sink: list[dict[str, Any]] = []
    tallies: list[Any] = []

    def handle(df: Any, batch_id: int) -> None:
        sink.extend(collect(windows_of(df, window), window))
        tallies.append(tally(batch_id, [r[0] for r in df.where(of_kind(COUNTS_ROW)).select(STATS).collect()]))
    query = stream_query.start(result.operator, checkpoint, handle, {"availableNow": True})
    query.awaitTermination()
    return sink, tallies


def run(spark: Any, root: Path, batches: list[list[dict[str, Any]]], window: Window) -> tuple[list[dict[str, Any]], list[Any]]:
    """Run `window` over the batches; returns (sink rows, per-batch tallies)."""
    return start(compile_window(feed(spark, root, batches), window), window, str(root / "ck"))


def emitted(rows: list[dict[str, Any]], window: Window, watermark_ms: int) -> list[dict[str, Any]]:
    out = evaluate(rows, window).rows
    return [r for r in out if r[window.window_end_column] <= watermark_ms * 1000]


def window_for(kind: str, **kw: Any) -> Window:
    base: dict[str, Any] = {"event_time_column": "ts", "event_time_unit": "ms", "group_by": ["k"],
                            "aggregations": AGGS, "max_groups_per_window": 1000, "lateness_ms": 4_000}
    extra = {"tumbling": {"duration_ms": 10_000},
             "hopping": {"duration_ms": 30_000, "hop_ms": 10_000, "late_mode": "consistent"},
             "session": {"gap_ms": 3_000}}[kind]
    return Window(kind=kind, **{**base, **extra, **kw})


@st.composite
def streams(draw: st.DrawFn, disorder_ms: int) -> list[list[dict[str, Any]]]:
    """Rows in roughly increasing time, shuffled within `disorder_ms`, cut
    into 2 to 5 micro-batches."""
    n = draw(st.integers(1, 40))
    rng = random.Random(draw(st.integers(0, 2**32)))
    base = [1_000_000 + i * 1_700 + rng.randrange(1_000) for i in range(n)]
    rows = [{"k": rng.choice("ab"), "ts": t, "v": float(rng.randrange(-5, 20))} for t in base]
    rows.sort(key=lambda r: r["ts"] + rng.randrange(disorder_ms + 1))
    cuts = sorted(rng.sample(range(1, n), min(n - 1, draw(st.integers(1, 4))))) if n > 1 else []
    return [rows[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]


SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
@SETTINGS
@given(data=st.data())
def test_stream_within_lateness_equals_batch_and_oracle(spark: Any, tmp_path_factory: Any, kind: str,
                                                        data: st.DataObject) -> None:
    window = window_for(kind)
    batches = data.draw(streams(disorder_ms=3_000))
    sink, tallies = run(spark, tmp_path_factory.mktemp("s"), batches, window)
    rows = [r for b in batches for r in b]
    wm = max(r["ts"] for r in rows) - window.lateness_ms
    assert tallies[-1].watermark_ms == wm
    assert sum(t.rows_late for t in tallies) == 0
    assert_same(sink, emitted(rows, window, wm), window)
    batch = wid.aggregate(spark.createDataFrame([tuple(r.values()) for r in rows], SCHEMA), window)
    assert_same(sink, [r for r in collect(batch, window) if r["window_end"] <= wm * 1000], window)


def test_bad_rows_are_rejected_and_counted(spark: Any, tmp_path: Path) -> None:
    window = window_for("tumbling")
    batches = [[{"k": "a", "ts": 1_000_000, "v": 1.0}, {"k": None, "ts": 1_001_000, "v": 2.0}],
               [{"k": "a", "ts": None, "v": 3.0}, {"k": "a", "ts": 1_030_000, "v": 4.0}]]
    result = wid.window_result(feed(spark, tmp_path, batches), window)
    reasons: list[str] = []
    query = (result.dead_letter.writeStream.foreachBatch(lambda df, _: reasons.extend(r[0] for r in df.collect()))
             .option("checkpointLocation", str(tmp_path / "ck-dlq")).trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted(reasons) == sorted(d.reason for d in evaluate([r for b in batches for r in b], window).dead_letter)


@pytest.mark.parametrize(("kw", "field"), [
    ({"kind": "count", "size_rows": 3, "order_by": "v"}, "order_by"),  # ranks on a stream follow event time
    ({"kind": "rolling", "duration_ms": 3_000, "every_rows": 2, "order_by": "v"}, "order_by"),
    ({"kind": "tumbling", "duration_ms": 10_000, "max_groups_per_window": None}, "max_groups_per_window"),
])
def test_what_no_streaming_path_runs_is_named(spark: Any, tmp_path: Path, kw: dict[str, Any], field: str) -> None:
    base = {"event_time_column": "ts", "event_time_unit": "ms", "group_by": ["k"], "aggregations": AGGS,
            "max_groups_per_window": 10}
    with pytest.raises(ConfigError) as err:
        wid.aggregate(feed(spark, tmp_path, [[]]), Window(**{**base, **kw}))
    assert err.value.field == field


@pytest.mark.parametrize("kw", [
    {"kind": "tumbling", "duration_ms": 10_000},
    {"kind": "tumbling", "duration_ms": 10_000, "late_data": "dlq"},
    {"kind": "session", "gap_ms": 1_000, "emit": "on_update"},
    {"kind": "hopping", "duration_ms": 30_000, "hop_ms": 10_000, "late_mode": "consistent"},
    {"kind": "tumbling", "duration_ms": 10_000, "source_idleness_ms": 1_000},
    {"kind": "count", "size_rows": 3},
    {"kind": "rolling", "duration_ms": 3_000},
    {"kind": "landmark", "hop_ms": 1_000, "landmark_ms": 0},
])
def test_every_stream_runs_on_the_wid_operator(spark: Any, tmp_path: Path, kw: dict[str, Any]) -> None:
    # one path for streams, whatever the window: Spark's own streaming aggregation cannot count late rows
    # one by one, nor close sessions by the rule (wid.spark.compile)
    base = {"event_time_column": "ts", "event_time_unit": "ms", "group_by": ["k"], "aggregations": AGGS,
            "max_groups_per_window": 10}
    result = wid.window_result(feed(spark, tmp_path, [[]]), Window(**{**base, **kw}))
    assert result.explain.path == "operator"
    assert result.explain.form.startswith("WID operator") and "counts every late row" in result.explain.why


@pytest.mark.parametrize("holistic", [False, True])
@pytest.mark.parametrize(("kind", "late_mode"), [("tumbling", "generous"), ("hopping", "consistent"),
                                                 ("hopping", "generous")])
def test_every_aggregation_streams_like_the_oracle(spark: Any, tmp_path: Path, kind: str, late_mode: str,
                                                   holistic: bool) -> None:
    """All aggregations of docs/semantics.md#aggregations (with a second column `w`),
    in order within the lateness, split into three micro-batches."""
    from tests.spark.test_differential import all_aggregations

    rng = random.Random(5)
    rows = [{"k": rng.choice("ab"), "ts": 1_000_000 + i * 900 + rng.randrange(500),
             "v": rng.choice([None, -2.5, 0.0, 1.0, 3.25, float(rng.randrange(50))]),
             "w": rng.choice([None, 1.0, 2.0, 7.0])} for i in range(60)]
    window = window_for(kind, aggregations=all_aggregations(holistic), late_mode=late_mode)
    global SCHEMA
    saved, SCHEMA = SCHEMA, "k string, ts long, v double, w double"
    try:
        sink, tallies = run(spark, tmp_path, [rows[:20], rows[20:45], rows[45:]], window)
    finally:
        SCHEMA = saved
    wm = max(r["ts"] for r in rows) - window.lateness_ms
    assert tallies[-1].watermark_ms == wm and sum(t.rows_late for t in tallies) == 0
    assert_same(sink, emitted(rows, window, wm), window)


def test_several_sources_watermark_is_their_minimum(spark: Any, tmp_path: Path) -> None:
    """Two sources, one ahead in event time: windows are emitted only up to
    the slower source's watermark (docs/semantics.md#completeness)."""
    window = window_for("tumbling")
    fast = [{"k": "a", "ts": 1_000_000 + i * 2_000, "v": 1.0} for i in range(40)]
    slow = [{"k": "b", "ts": 1_000_000 + i * 1_000, "v": 2.0} for i in range(20)]
    sources = {"fast": feed(spark, tmp_path / "fast", [fast]), "slow": feed(spark, tmp_path / "slow", [slow])}
    sink, tallies = start(compile_window(sources, window), window, str(tmp_path / "ck"))
    wm = min(max(r["ts"] for r in fast), max(r["ts"] for r in slow)) - window.lateness_ms
    assert tallies[-1].watermark_ms == wm
    assert sum(t.rows_in for t in tallies) == 60 and sum(t.rows_late for t in tallies) == 0
    assert_same(sink, emitted(fast + slow, window, wm), window)
