"""wid's windows in Spark Declarative Pipelines (`wid.pipelines.declarative`),
what runs without a pipeline: the form each emit mode and late-data policy
takes, the refusals, the one line on a Spark without ``pyspark.pipelines``,
and definitions that change no setting of the session. The example
project runs in ``tests/test_declarative_example.py``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wid import Aggregation, ConfigError, InputError, MissingDependencyError, Window
from wid.pipelines.declarative import check_sink, form_of, window_datasets

COUNT = [Aggregation("count", as_="n")]


def window(kind: str = "tumbling", **kw: Any) -> Window:
    extent = {"tumbling": {"duration_ms": 60_000}, "session": {"gap_ms": 5_000}}[kind]
    return Window(kind=kind, event_time_column="ts", group_by=["k"], max_groups_per_window=10, aggregations=COUNT,
                  **extent, **kw)


@pytest.mark.parametrize(("kind", "policy", "streaming", "form"), [
    ("tumbling", {}, True, "append"),
    ("tumbling", {"late_data": "dlq"}, True, "append"),
    ("tumbling", {"emit": "on_update"}, True, "changelog"),
    ("tumbling", {"late_data": "reopen", "allowed_lateness_ms": 60_000}, True, "changelog"),
    ("session", {"emit": "on_update"}, True, "changelog"),
    ("session", {}, True, "append"),
    ("tumbling", {"emit": "on_update"}, False, "batch"),
    ("session", {"late_data": "dlq"}, False, "batch"),
])
def test_each_emit_mode_and_late_policy_takes_its_form(kind: str, policy: dict[str, Any], streaming: bool,
                                                       form: str) -> None:
    w = window(kind, **policy)
    got = form_of(w, streaming)
    assert got.kind == form
    if form == "changelog":
        assert "NAME_changes" in got.windows and "latest value per natural key" in got.windows
        assert ("retractions" in got.windows) == (kind == "session")
    if streaming:  # the dead letter says what happens to late rows
        assert {"drop": "dropped and counted", "dlq": "appended beside them",
                "reopen": "reopen their window"}[w.late_data] in got.dead_letter


def test_a_sink_takes_final_windows_of_a_stream_only() -> None:
    check_sink("w", window(), form_of(window(), True))  # appended once each, final: accepted
    with pytest.raises(ConfigError) as batch:
        check_sink("w", window(), form_of(window(), False))
    assert batch.value.field == "sink_format" and "materialized view" in str(batch.value)
    updated = window(emit="on_update")
    with pytest.raises(ConfigError) as twice:
        check_sink("w", updated, form_of(updated, True))
    assert twice.value.field == "emit" and "emitted more than once" in str(twice.value) and "w_changes" in str(twice.value)
    reopened = window("session", late_data="reopen", allowed_lateness_ms=1000)
    with pytest.raises(ConfigError) as corrected:
        check_sink("s", reopened, form_of(reopened, True))
    assert corrected.value.field == "late_data" and "retractions" in str(corrected.value)


@pytest.mark.leg
def test_without_pyspark_pipelines_one_line_names_the_release_and_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    # Spark 4.0 has none (the oldest-Spark leg tests the real thing); elsewhere the module is hidden
    if importlib.util.find_spec("pyspark.pipelines") is not None:
        monkeypatch.setitem(sys.modules, "pyspark.pipelines", None)
    with pytest.raises(MissingDependencyError) as missing:
        window_datasets("w", object(), window())  # type: ignore[arg-type]
    message = str(missing.value)
    assert "\n" not in message and "Spark 4.1 and later" in message and "pip install 'spark-wid[pipelines]'" in message


@pytest.mark.leg
def test_the_module_imports_pyspark_pipelines_only_when_a_dataset_is_declared() -> None:
    code = "import sys, wid.pipelines.declarative; print('pyspark.pipelines' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "False"


@pytest.mark.skipif(importlib.util.find_spec("pyspark.pipelines") is None, reason="no pyspark.pipelines (Spark 4.0)")
def test_a_source_that_is_not_a_spark_dataframe_is_named() -> None:
    import pandas as pd

    with pytest.raises(InputError, match="source is a pandas DataFrame"):
        window_datasets("w", pd.DataFrame({"ts": [1]}), window())


def test_compiling_for_a_pipeline_leaves_the_session_s_settings_as_they_are(spark: Any, tmp_path: Path) -> None:
    # a definition file may not change them (SESSION_MUTATION_IN_DECLARATIVE_PIPELINE): the operator's flow
    # carries the state store settings instead (wid.spark.operator.query.store_settings)
    from wid.spark.compile import compile_window
    from wid.spark.operator.query import CHANGELOG, PROVIDER, ROCKSDB, store_settings

    before = {key: spark.conf.get(key, None) for key in (PROVIDER, CHANGELOG)}
    spark.conf.unset(PROVIDER)
    spark.conf.unset(CHANGELOG)
    try:
        (tmp_path / "land").mkdir()
        stream = spark.readStream.schema("k STRING, ts TIMESTAMP").json(str(tmp_path / "land"))
        compiled = compile_window(stream, window(), configure=False)
        assert compiled.stream is not None
        assert spark.conf.get(CHANGELOG, None) is None and spark.conf.get(PROVIDER, None) != ROCKSDB
        assert store_settings(spark) == {PROVIDER: ROCKSDB, CHANGELOG: "true"}
        spark.conf.set(CHANGELOG, "false")  # a pipeline's own choice stands
        assert store_settings(spark) == {PROVIDER: ROCKSDB}
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
