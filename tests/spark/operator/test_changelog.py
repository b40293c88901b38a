"""A window emitted more than once, as a changelog
(`wid.spark.operator.changelog`): on Spark's state store, each micro-batch's
changelog rows are exactly the streaming oracle's emissions of that
micro-batch (partial values, corrections, retracted sessions), `_wid_seq`
grows from one micro-batch to the next for every natural key, and the
changelog appended to files and folded by `latest_of` is what a keyed sink
holds after the oracle's emissions (`wid.semantics.sink_state.sink_rows`)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.spark.compare import assert_same, collect
from tests.spark.operator.spark_run import ddl, land
from tests.transcript import HERE, load, schema_of
from wid.semantics.sink_state import sink_rows
from wid.semantics.stream_oracle import run_stream
from wid.spark import stream_query
from wid.spark.compile import compile_window
from wid.spark.operator.changelog import CHANGE, DELETE, SEQUENCE, UPSERT, latest_of
from wid.spec.window import FINAL_COLUMN

# sessions that merge and move their start (retractions, partial values); hopping windows corrected by late
# rows; rolling rows (every input column their key) corrected and updated
TRANSCRIPTS = ["session_on_update", "hopping_generous_reopen", "rolling_reopen_on_update"]


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_the_changelog_is_the_oracle_s_emissions_and_folds_to_the_keyed_sink(spark: Any, tmp_path: Path,
                                                                               name: str) -> None:
    transcript = load(HERE / f"{name}.toml")
    window = transcript.window
    land(tmp_path / "land", transcript.batches)
    source = spark.readStream.schema(ddl(schema_of(transcript))).option("maxFilesPerTrigger", 1) \
        .json(str(tmp_path / "land"))
    compiled = compile_window(source, window, source="a")
    stage = compiled.stream
    assert window.reemits and stage is not None and stage.changes_of is not None
    columns, key = list(compiled.result.output.columns), compiled.natural_key
    seen: dict[int, list[dict[str, Any]]] = {}

    def handle(rows: Any, batch_id: int) -> None:
        changes = stage.changes_of(rows).persist()
        changes.write.mode("append").parquet(str(tmp_path / "changes"))
        seen[batch_id] = collect(changes, window)
        changes.unpersist()
    stream_query.start(stage.rows, str(tmp_path / "ck"), handle, {"availableNow": True}).awaitTermination()

    oracle = run_stream(transcript.batches, window)
    assert len(seen) == len(oracle) and any(len(r.emitted) > 1 for r in oracle)
    last: dict[tuple[Any, ...], int] = defaultdict(int)
    for batch_id, result in zip(sorted(seen), oracle, strict=True):
        got = seen[batch_id]
        upserts = [{c: r[c] for c in columns} for r in got if r[CHANGE] == UPSERT]
        want = [{**e.row, FINAL_COLUMN: e.final} if window.emit == "on_update" else e.row
                for e in result.emitted if not e.retract]
        assert_same(upserts, want, window)
        deleted = sorted(tuple(r[c] for c in key) for r in got if r[CHANGE] == DELETE)
        assert deleted == sorted(tuple(e.row[c] for c in key) for e in result.emitted if e.retract)
        numbers: dict[tuple[Any, ...], set[int]] = defaultdict(set)
        for r in got:
            numbers[tuple(r[c] for c in key)].add(r[SEQUENCE])
        for k, seqs in numbers.items():  # one number a micro-batch, larger than the key's earlier ones
            assert len(seqs) == 1 and min(seqs) > last[k], (k, seqs, last[k])
            last[k] = min(seqs)
    if window.shape.retracts:
        assert any(r[CHANGE] == DELETE for rows in seen.values() for r in rows), "the transcript retracts"

    folded = collect(latest_of(spark.read.parquet(str(tmp_path / "changes")), key, columns), window)
    assert_same(folded, sink_rows(window, oracle, columns), window)
