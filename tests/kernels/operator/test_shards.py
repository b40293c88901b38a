"""The WID operator's shard engines (run without Spark, over in-memory
stores) against the hand-worked transcripts and the streaming oracle."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.operator.cases import SCHEMA, assert_same_results, specs, streams
from tests.kernels.operator.harness import LocalOperator
from tests.transcript import Transcript, all_transcripts, is_punctuation, schema_of
from wid import Window
from wid.kernels.operator import time_engine
from wid.semantics.stream_oracle import MicroBatch, run_stream

TRANSCRIPTS = all_transcripts()  # every kind runs on the operator


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.name for t in TRANSCRIPTS])
@pytest.mark.parametrize("shards", [1, 3])
def test_shards_replay_every_transcript(transcript: Transcript, shards: int) -> None:
    operator = LocalOperator(transcript.window, schema_of(transcript), shards, is_punctuation)
    transcript.check(operator.run(transcript.batches))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=specs(), batches=streams(), shards=st.integers(1, 4), chunk=st.sampled_from([1, 5, 1 << 20]))
def test_shards_equal_the_oracle(window: Window, batches: list[MicroBatch], shards: int, chunk: int) -> None:
    """`chunk`: windows a chunk of the time engine's emission holds (one
    group a chunk, a few groups, everything at once)."""
    with mock.patch.object(time_engine, "EMIT_WINDOWS", chunk):
        got = LocalOperator(window, SCHEMA, shards).run(batches)
    assert_same_results(window, got, run_stream(batches, window))


def test_a_shard_keeps_the_number_of_its_micro_batches_and_stamps_its_rows_with_it() -> None:
    # the changelog of a window emitted more than once orders a window's emissions by it
    # (wid.spark.operator.changelog); a checkpoint written before it was kept counts from 0
    import json

    import pyarrow as pa

    from wid.kernels.operator.output import KIND, SEQUENCE, STATS, WINDOW_ROW, frames
    from wid.kernels.operator.shard import Meta, ShardOutput

    assert Meta.loads(Meta(batches=7).dumps()).batches == 7
    assert Meta.loads(json.dumps({"global": None, "sources": {}, "shards": 2, "layout": 2}).encode()).batches == 0
    schema = pa.schema([(KIND, pa.string()), ("n", pa.int64()), (SEQUENCE, pa.int64()), (STATS, pa.string())])
    out = ShardOutput(windows=pa.table({"n": [1, 2]}), stats={"rows": 2}, sequence=8)
    got = [f.to_dict("records") for f in frames(out, schema)]
    assert [(r[KIND], r["n"], r[SEQUENCE]) for f in got for r in f][:2] == [(WINDOW_ROW, 1, 8), (WINDOW_ROW, 2, 8)]
    assert got[-1][0][SEQUENCE] == 8 and json.loads(got[-1][0][STATS])["rows"] == 2
