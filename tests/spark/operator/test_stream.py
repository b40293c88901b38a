"""The WID operator on Spark Structured Streaming (real state store, real
checkpoints) against the hand-worked transcripts and the streaming oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark.operator.spark_run import run_on_spark
from tests.transcript import HERE, load, schema_of

ON_SPARK = ["hopping_generous_reopen", "hopping_consistent_dlq", "keyed_punctuation", "global_punctuation",
            "tumbling_on_update", "session_on_update", "session_reopen"]


@pytest.mark.parametrize("name", ON_SPARK)
def test_spark_replays_the_transcript(spark: Any, tmp_path: Path, name: str) -> None:
    transcript = load(HERE / f"{name}.toml")
    got = run_on_spark(spark, tmp_path, transcript.batches, transcript.window, schema_of(transcript))
    transcript.check(got)


from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.spark.operator.test_engine import SCHEMA, assert_same_results, specs, streams  # noqa: E402
from wid.semantics.stream_oracle import MicroBatch, run_stream  # noqa: E402


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(window=specs(), batches=streams(), data=st.data())
def test_spark_equals_the_oracle(spark: Any, tmp_path_factory: Any, window: Any, batches: list[MicroBatch],
                                 data: st.DataObject) -> None:
    batches = [MicroBatch([("a", r) for _, r in b.rows], b.batch_ms) for b in batches if b.rows]
    got = run_on_spark(spark, tmp_path_factory.mktemp("op"), batches, window, SCHEMA)
    assert_same_results(window, got, run_stream(batches, window))
