"""Running a window on Spark Structured Streaming through the WID operator,
one landing file per micro-batch, and reading its output back as the
streaming oracle's `BatchResult`s."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.kernels.operator.harness import emission_row
from wid.kernels.fields import FINAL, START
from wid.kernels.operator.output import (
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    STATS,
    WINDOW_ROW,
)
from wid.kernels.tables import ORIGINAL, REASON, ROW_JSON, SRC
from wid.semantics.oracle import DeadLetter
from wid.semantics.stream_oracle import BatchResult, Emission, LateRow, MicroBatch
from wid.spark.compile import compile_window
from wid.spec.window import Window


def land(root: Path, batches: list[MicroBatch]) -> None:
    """One JSON file per micro-batch, in order."""
    root.mkdir(parents=True)
    for i, batch in enumerate(batches):
        path = root / f"part-{i:04d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for _, r in batch.rows))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def ddl(schema: pa.Schema) -> str:
    names = {pa.string(): "STRING", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"}
    return ", ".join(f"{f.name} {names[f.type]}" for f in schema)


def operator_rows(spark: Any, root: Path, batches: list[MicroBatch], window: Window, schema: pa.Schema,
                  through: Callable[[Any], Any] | None = None) -> list[list[dict[str, Any]]]:
    """Run `window` on the batches (all from source ``a``), read through
    `through` when given (a DataFrame step); the operator's output rows of
    each micro-batch Spark ran (it runs one per landing file)."""
    land(root / "land", batches)
    df = spark.readStream.schema(ddl(schema)).option("maxFilesPerTrigger", 1).json(str(root / "land"))
    df = df if through is None else through(df)
    result = compile_window(df, window, source="a")
    assert result.operator is not None, result.result.explain.form
    seen: dict[int, list[dict[str, Any]]] = defaultdict(list)

    def handle(frame: Any, batch_id: int) -> None:
        seen[batch_id] = [r.asDict() for r in frame.collect()]
    query = (result.operator.writeStream.foreachBatch(handle).option("checkpointLocation", str(root / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return [seen[b] for b in sorted(seen)]


def run_on_spark(spark: Any, root: Path, batches: list[MicroBatch], window: Window, schema: pa.Schema,
                 through: Callable[[Any], Any] | None = None) -> list[BatchResult]:
    """`operator_rows` as one `BatchResult` per micro-batch."""
    results = [to_result(rows, window, schema.names)
               for rows in operator_rows(spark, root, batches, window, schema, through)]
    for before, now in zip(results, results[1:], strict=False):
        if now.watermark_us is None:  # no row reached the shards (all rejected): the watermark stays
            now.watermark_us = before.watermark_us
    return results


def to_result(rows: list[dict[str, Any]], window: Window, columns: Sequence[str] = ()) -> BatchResult:
    """One micro-batch of operator output as a `BatchResult`: rows_in counts
    the data rows the shards saw, rejected ones included; `columns` are the
    input columns a rolling row carries."""
    out = BatchResult()
    for r in rows:
        kind = r[KIND]
        if kind == WINDOW_ROW:
            out.emitted.append(Emission(emission_row(window, r, columns), final=r[FINAL]))
        elif kind == RETRACTION_ROW:
            row = {window.window_start_column: r[START], window.window_end_column: None,
                   **{k: r[k] for k in window.group_by}}
            out.emitted.append(Emission(row, final=False, retract=True))
        elif kind == LATE_ROW:
            out.late.append(LateRow(r[SRC], {c[len(ORIGINAL):]: v for c, v in r.items() if c.startswith(ORIGINAL)},
                                    r[REASON]))
        elif kind == REJECTED_ROW:
            out.rejected.append(DeadLetter(r[REASON], json.loads(r[ROW_JSON]), r[SRC]))
        else:
            stats = json.loads(r[STATS])
            out.rows_in += stats["rows"] + stats["rejected"]
            out.rows_late_dropped += stats["late_dropped"]
            out.punctuations += stats["punctuations"]
            out.watermark_us = stats["watermark_us"]
    return out
