"""A local master retries a failed task as a cluster does
(`wid.spark.spark_session.with_task_retries`): one task that fails once,
as a Python worker that did not connect back on a loaded machine, no
longer ends a stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.kernels.operator.cases import assert_same_results
from tests.spark.operator.spark_run import ddl, run_on_spark
from tests.transcript import HERE, load, schema_of
from wid.semantics.stream_oracle import run_stream
from wid.spark.spark_session import LOCAL_TASK_ATTEMPTS, with_task_retries


@pytest.mark.parametrize(("master", "started"), [
    ("local", f"local[1,{LOCAL_TASK_ATTEMPTS}]"), ("local[2]", f"local[2,{LOCAL_TASK_ATTEMPTS}]"),
    ("local[*]", f"local[*,{LOCAL_TASK_ATTEMPTS}]"), ("local[2,1]", "local[2,1]"),  # retries chosen: kept
    ("spark://127.0.0.1:7077", "spark://127.0.0.1:7077"), ("yarn", "yarn")])
def test_local_masters_get_a_cluster_s_task_attempts(master: str, started: str) -> None:
    assert with_task_retries(master) == started


def test_a_stream_goes_on_after_one_task_fails(spark: Any, tmp_path: Path) -> None:
    assert str(spark.conf.get("spark.master")).endswith(f",{LOCAL_TASK_ATTEMPTS}]")  # the suite's local[2]
    transcript = load(HERE / "tumbling_drop.toml")
    schema = schema_of(transcript)
    marker = tmp_path / "failed-once"

    def fail_once(frames: Any) -> Any:  # runs in a Python worker: the first task to get here fails
        if not marker.exists():
            marker.touch()
            raise RuntimeError("a task that fails once")
        yield from frames

    got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema,
                       through=lambda df: df.mapInPandas(fail_once, ddl(schema)))
    assert marker.exists(), "no task failed"
    assert_same_results(transcript.window, got, run_stream(transcript.batches, transcript.window))
