"""`wid explain` facts: state bounds, warnings, chosen forms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import wid
from wid.spark.explain import explain, state_bound, warnings
from wid.spec import Aggregation, Window

N = (Aggregation("count", as_="n"), Aggregation("count_distinct", "u", as_="d"))


def test_state_bound_multiplies_windows_groups_and_state() -> None:
    w = Window(kind="hopping", duration_ms=60_000, hop_ms=10_000, lateness_ms=20_000, event_time_column="t",
               aggregations=N, max_groups_per_window=1000)
    total, text = state_bound(w)
    # (60 s + 20 s lateness) / 10 s hop = 8 windows; count 24 B + HLL 8 KiB per group
    assert total == 8 * 1000 * (24 + 8192)
    assert "8 active windows x 1000 groups" in text


def test_state_bound_warns_above_one_gigabyte() -> None:
    w = Window(kind="hopping", duration_ms=3_600_000, hop_ms=60_000, event_time_column="t", aggregations=N,
               max_groups_per_window=10_000)
    assert any("above 1 GB" in x for x in warnings(None, w))
    med = Window(kind="tumbling", duration_ms=1000, event_time_column="t", aggregations=(Aggregation("med", "v", as_="m"),))
    assert state_bound(med)[0] is None


def test_explain_reports_the_form_and_operators(spark: Any) -> None:
    df = spark.createDataFrame([(t, "a", 1.0) for t in range(50)], "t long, k string, v double")  # 50 rows a pane
    w = Window(kind="hopping", duration_ms=60_000, hop_ms=20_000, event_time_column="t", event_time_unit="ms",
               group_by=["k"], aggregations=(Aggregation("sum", "v", as_="s"),))
    ex = explain(wid.window_result(df, w), w)
    assert ex.form == "panes of 20000 ms + vectorised Arrow merge (prefix sums + sparse tables)"
    assert any(n.startswith("pane plan: rows per key and pane 50 ") for n in ex.notes), ex.notes
    assert ex.operators.get("MapInArrow") == 1 and "Window" not in ex.operators
    assert ex.operators.get("HashAggregate") == 2  # Spark's pane aggregate: partial before its shuffle, final after
    assert ex.operators.get("Exchange") == 2  # the pane aggregate's shuffle, then the pane partials by key
    spark.conf.set("spark.wid.paneMerge", "spark")
    try:
        jvm = explain(wid.window_result(df, w), w)
    finally:
        spark.conf.unset("spark.wid.paneMerge")
    assert jvm.form == "panes of 20000 ms + block prefix/suffix merge in Spark"
    assert "setting spark.wid.paneMerge = spark" in jvm.notes and not any("spark.wid" in n for n in ex.notes)
    assert jvm.operators.get("Window", 0) >= 2 and jvm.operators.get("Generate") == 1
    assert jvm.operators.get("Exchange") == 2  # as above: the merge's windows over keys reuse the second


def test_sparse_panes_take_the_fused_plan(spark: Any) -> None:
    # two keys, one row in each 20 s pane of 100: 1 row per key and pane, below the measured crossover
    df = spark.createDataFrame([(t * 20_000, k, 1.0) for t in range(100) for k in "ab"], "t long, k string, v double")
    w = Window(kind="hopping", duration_ms=600_000, hop_ms=20_000, event_time_column="t", event_time_unit="ms",
               group_by=["k"], aggregations=(Aggregation("sum", "v", as_="s"),))
    ex = explain(wid.window_result(df, w), w)
    assert ex.form.startswith("panes of 20000 ms + fused vectorised Arrow merge"), ex.form
    assert any(n.startswith("pane plan: rows per key and pane 1 ") for n in ex.notes), ex.notes
    assert "HashAggregate" not in ex.operators and ex.operators.get("Exchange") == 1  # the rows, by key, once


def test_processing_time_stamps_arrival(spark: Any) -> None:
    df = spark.createDataFrame([("a",), ("b",)], "k string")
    w = Window(kind="tumbling", duration_ms=86_400_000, time_mode="processing", aggregations=(Aggregation("count", as_="n"),))
    assert [r.n for r in wid.aggregate(df, w).collect()] == [2]


def test_doctor_reports_the_installed_spark() -> None:
    import pyspark

    from wid.doctor import checks

    found = {c.name: c for c in checks()}
    assert found["PySpark"].ok and found["PySpark"].found.endswith(pyspark.__version__)
    assert found["Java 17"].ok


@pytest.mark.parametrize(("version", "ok"), [("3.5.3", False), ("4.0.4", False), ("4.0.5", True), ("4.1.4", True),
                                             ("4.3.0", True), ("4.4.0", False)])
def test_doctor_names_the_supported_range(monkeypatch: pytest.MonkeyPatch, version: str, ok: bool) -> None:
    from wid import doctor

    monkeypatch.setattr(doctor, "installed_spark", lambda: ("pyspark", version))
    check = doctor._spark()
    assert (check.ok, check.found) == (ok, f"pyspark {version}")
    assert (check.fix == "") == ok and (ok or "pyspark>=4.0.5,<4.4" in check.fix)


def test_the_supported_range_is_pyproject_s() -> None:
    import tomllib

    from wid.versions import SUPPORTED_SPARK

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"pyspark{SUPPORTED_SPARK}" in pyproject["project"]["optional-dependencies"]["spark"]


# `wid explain` without --plan reads the spec alone: the forms it names must include the one Spark compiles
OUTLINED = {
    "tumbling": dict(kind="tumbling", duration_ms=10_000),
    "hopping panes": dict(kind="hopping", duration_ms=60_000, hop_ms=5_000),
    "hopping copy": dict(kind="hopping", duration_ms=20_000, hop_ms=10_000),
    "hopping tumbling": dict(kind="hopping", duration_ms=20_000, hop_ms=20_000),
    "landmark": dict(kind="landmark", hop_ms=10_000, landmark_ms=0, max_duration_ms=60_000),
    "session": dict(kind="session", gap_ms=5_000),
    "session by column": dict(kind="session", gap_column="gap"),
    "count tumbling": dict(kind="count", size_rows=3),
    "count sliding": dict(kind="count", size_rows=3, hop_rows=1),
    "count per row": dict(kind="count", size_rows=3, hop_rows=1, partition_by=("k",), group_by=()),
    "rolling": dict(kind="rolling", duration_ms=15_000),
}
AGGS = {"numbers": (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "v", as_="hi")),
        "strings": (Aggregation("count", as_="n"), Aggregation("min", "name", as_="first_name")),
        "median": (Aggregation("count", as_="n"), Aggregation("med", "v", as_="m"))}


@pytest.mark.parametrize("setting", ["arrow", "fused", "spark"])
@pytest.mark.parametrize("aggs", list(AGGS))
@pytest.mark.parametrize("shape", list(OUTLINED))
def test_the_outline_names_the_form_spark_compiles(spark: Any, shape: str, aggs: str, setting: str) -> None:
    from wid.spark.arrow_merge import CONF
    from wid.spark.batch import outline_batch

    df = spark.createDataFrame([(i * 1000, "ab"[i % 2], float(i), f"n{i % 3}", 3000) for i in range(40)],
                               "ts long, k string, v double, name string, gap long")
    window = Window(**{"group_by": ("k",), **OUTLINED[shape]}, event_time_column="ts", event_time_unit="ms",
                    aggregations=AGGS[aggs])
    spark.conf.set(CONF, setting)
    try:
        compiled = wid.window_result(df, window).explain
    finally:
        spark.conf.unset(CONF)
    outlined = outline_batch(window, setting)
    assert compiled.form in outlined.forms, (compiled.form, outlined.forms)
    assert compiled.why == outlined.why and set(outlined.notes) <= set(compiled.notes)


def test_wid_explain_on_a_batch_file_starts_no_spark(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    toml = (Path(__file__).resolve().parents[2] / "examples" / "flights_carrier_hopping.toml").read_text()
    (tmp_path / "p.toml").write_text(toml)
    # no Java at all: starting Spark would fail
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "PATH": os.path.dirname(sys.executable)}
    done = subprocess.run([sys.executable, "-m", "wid.cli", "explain", "p.toml"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "window stage (hopping)" in done.stdout and "Streaming" not in done.stdout


def test_a_window_with_no_numpy_merge_takes_no_sample(spark: Any) -> None:
    # an HLL sketch merges only in the JVM: whatever the density, the fused plan cannot run, so nothing is sampled
    df = spark.createDataFrame([(t * 20_000, k, 1.0) for t in range(100) for k in "ab"], "t long, k string, v double")
    w = Window(kind="hopping", duration_ms=600_000, hop_ms=20_000, event_time_column="t", event_time_unit="ms",
               group_by=["k"], aggregations=(Aggregation("count_distinct", "v", as_="d"),))
    ex = explain(wid.window_result(df, w), w)
    assert ex.form == "panes of 20000 ms + block prefix/suffix merge in Spark", ex.form
    assert any("no NumPy merge over rows" in n for n in ex.notes), ex.notes
