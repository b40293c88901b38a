"""A window kind added as docs/architecture.md#window-kinds says: its own
module per layer (`tests/kinds/global_*.py`: spec, semantics, WID operator
engine, driver plan), one line per registry, its transcript; nothing else
of wid changes. Registered for these tests only, the `global` kind (Beam's
and Flink's GlobalWindows: one window per group from the landmark on,
never closed) then runs through `wid validate`, the batch and streaming
oracles, the batch plans and the WID operator (its shards, and a Spark
stream), each checked against pandas or the oracles."""

from __future__ import annotations

import inspect
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.kernels.operator.cases import SCHEMA, assert_same_results, streams
from tests.kernels.operator.harness import LocalOperator
from tests.kinds import global_engine, global_plan, global_semantics, global_spec
from tests.kinds.global_engine import GlobalEngine, GlobalShape
from tests.kinds.global_plan import GlobalPlan
from tests.kinds.global_semantics import GlobalSemantics
from tests.kinds.global_spec import GlobalWindows
from tests.transcript import load, schema_of
from wid import Aggregation, ConfigError, Window
from wid.cli import app
from wid.kernels.operator.engines import ENGINES
from wid.semantics import evaluate
from wid.semantics.kinds import SEMANTICS
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.spark.kinds import PLANS
from wid.spec.kinds import KINDS
from wid.spec.toml_io import dumps_window, loads_window

HERE = Path(__file__).parent
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "w", as_="hi"))


@pytest.fixture
def global_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kind, in each layer's registry: one line each."""
    monkeypatch.setitem(KINDS, GlobalWindows.kind, GlobalWindows)
    monkeypatch.setitem(SEMANTICS, GlobalWindows, GlobalSemantics())
    monkeypatch.setitem(ENGINES, GlobalShape, GlobalEngine)
    monkeypatch.setitem(PLANS, GlobalWindows, GlobalPlan())


def window(landmark_ms: int | None = -20, **extra: Any) -> Window:
    common = {"event_time_column": "ts", "event_time_unit": "ms", "group_by": ["k"], "aggregations": AGGS,
              "max_groups_per_window": 100, "emit": "on_update", **extra}
    return Window.global_(landmark_ms, **common)


def test_it_is_a_window_like_any_other(global_kind: None) -> None:
    w = window(None, landmark="1970-01-01 00:00:00")
    assert w == Window(kind="global", landmark="1970-01-01 00:00:00", event_time_column="ts", event_time_unit="ms",
                       group_by=["k"], aggregations=AGGS, max_groups_per_window=100, emit="on_update")
    assert loads_window(dumps_window(w)) == w and w.landmark_ms == 0
    assert {"landmark_ms", "landmark"} <= set(inspect.signature(Window.global_).parameters)
    with pytest.raises(ConfigError) as err:
        Window(kind="global", event_time_column="ts", aggregations=AGGS)
    assert err.value.field == "landmark_ms"


def test_validate_runs_its_stream_rule(global_kind: None, tmp_path: Path) -> None:
    (tmp_path / "land").mkdir()
    table = dumps_window(window()).replace('emit = "on_update"\n', "")  # on close: no final value ever comes

    def validate(stream: bool, text: str) -> tuple[int, str]:
        source = '[source]\nformat = "json"\npath = "land"\nschema = "k STRING, ts LONG, v DOUBLE, w LONG"\n'
        (tmp_path / "p.toml").write_text(f'name = "g"\n{source}{"stream = true" if stream else ""}\n{text}')
        done = CliRunner().invoke(app, ["validate", str(tmp_path / "p.toml")])
        return done.exit_code, done.output
    code, said = validate(True, table)
    assert code == 2 and "transform.window.emit: emit = 'on_close' on a stream: global windows emit 'on_update'" in said
    assert validate(False, table)[0] == 0 and validate(True, dumps_window(window()))[0] == 0


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from("abc"), st.integers(-40, 40), st.integers(-5, 5)), max_size=30))
def test_the_batch_oracle_is_pandas_group_by(rows: list[tuple[str, int, int]]) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setitem(KINDS, GlobalWindows.kind, GlobalWindows)
        m.setitem(SEMANTICS, GlobalWindows, GlobalSemantics())
        got = evaluate([{"k": k, "ts": t, "v": float(v), "w": v} for k, t, v in rows], window(), now_ms=0)
    frame = pd.DataFrame(rows, columns=["k", "ts", "v"])
    kept = frame[frame.ts >= -20].groupby("k").agg(n=("v", "size"), s=("v", "sum"), hi=("v", "max")).reset_index()
    want = {(r.k, r.n, float(r.s), int(r.hi)) for r in kept.itertuples()}
    assert {(r["k"], r["n"], r["s"], r["hi"]) for r in got.rows} == want
    assert all(r["window_start"] == -20_000 and r["window_end"] is None for r in got.rows)
    assert got.rows_rejected == int((frame.ts < -20).sum())


def test_its_transcript_by_the_oracle_and_the_shards(global_kind: None) -> None:
    transcript = load(HERE / "global_on_update.toml")
    transcript.check(run_stream(transcript.batches, transcript.window))
    for shards in (1, 3):
        transcript.check(LocalOperator(transcript.window, schema_of(transcript), shards).run(transcript.batches))
    with pytest.raises(ValueError, match="emit"):
        run_stream(transcript.batches, Window(**{**_fields(transcript.window), "emit": "on_close"}))


def _fields(w: Window) -> dict[str, Any]:
    from dataclasses import fields

    return {f.name: getattr(w, f.name) for f in fields(w) if f.init}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=streams(), shards=st.integers(1, 3))
def test_its_shards_give_the_streaming_oracle_s_answer(batches: list[MicroBatch], shards: int) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setitem(KINDS, GlobalWindows.kind, GlobalWindows)
        m.setitem(SEMANTICS, GlobalWindows, GlobalSemantics())
        m.setitem(ENGINES, GlobalShape, GlobalEngine)
        m.setitem(PLANS, GlobalWindows, GlobalPlan())
        w = window(lateness_ms=5)
        assert_same_results(w, LocalOperator(w, SCHEMA, shards).run(batches), run_stream(batches, w))


def test_the_batch_plan_gives_the_oracle_s_rows_and_dead_letters(global_kind: None, spark: Any) -> None:
    from tests.spark.compare import check_against_oracle

    rng = random.Random(3)
    rows = [{"k": rng.choice("ab"), "ts": rng.randrange(-40, 40), "v": float(rng.randrange(9)), "w": rng.randrange(9)}
            for _ in range(60)]
    result = check_against_oracle(spark, rows, "k string, ts long, v double, w long", window(emit="on_close"))
    assert result.explain.forms == ("groupBy",)


def test_a_stream_on_the_operator_gives_the_oracle_s_answer(global_kind: None, spark: Any, tmp_path: Path) -> None:
    from tests.spark.operator.spark_run import run_on_spark
    from wid.spark.shipping import ship

    ship(global_spec, global_semantics, global_engine, global_plan)  # executors import no tests: send them along
    rng = random.Random(5)
    rows = [{"k": rng.choice("ab"), "ts": i * 3 + rng.randrange(-6, 6), "v": float(i % 7), "w": i % 5}
            for i in range(40)]
    batches = [MicroBatch([("a", r) for r in rows[i:i + 10]], i) for i in range(0, 40, 10)]
    w = window(lateness_ms=5)
    got = run_on_spark(spark, tmp_path, batches, w, SCHEMA)
    assert_same_results(w, got, run_stream(batches, w))
