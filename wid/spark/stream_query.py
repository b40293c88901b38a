"""Starting a streaming query of wid's and the counts of each of its
micro-batches (the accounting identity of DESIGN.md section 5, per
micro-batch).

`start` writes the WID operator's rows through ``foreachBatch`` (every wid
sink is a batch writer that upserts by natural key, so a replayed batch
overwrites itself); `BatchTally` is what the writer records of each
micro-batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

Handler = Callable[[DataFrame, int], None]


@dataclass(frozen=True)
class BatchTally:
    """One micro-batch: rows read (good plus rejected), good rows (the rest
    were rejected), late rows (of
    which `rows_late_dlq` went to the dead letter, the rest were dropped),
    rows added to windows, and the watermark it ran with (epoch
    milliseconds; windows that end at or before it are emitted), and how
    long the micro-batch took. The WID operator also reports the windows
    and groups it holds and each source's watermark."""

    batch_id: int
    rows_in: int
    rows_good: int
    rows_late: int
    rows_aggregated: int
    watermark_ms: int
    duration_ms: int = 0
    rows_late_dlq: int = 0
    windows_active: int | None = None
    state_groups: int | None = None
    source_watermarks_ms: tuple[tuple[str, int | None], ...] = ()
    rows_refused: int = 0  # output rows the target database could not hold (in the dead letter)

    @property
    def rows_rejected(self) -> int:
        return self.rows_in - self.rows_good

    @property
    def rows_late_dropped(self) -> int:
        return self.rows_late - self.rows_late_dlq


def discard_interrupted_first_offset(spark: SparkSession, checkpoint: str) -> list[str]:
    """Delete what a crash during a query's very first offset-log write left
    in `checkpoint`, and return the names deleted.

    Spark writes ``offsets/0`` as a hidden temporary file (``.0.<uuid>.tmp``
    and its ``.crc``) renamed into place when complete. A process killed
    before the rename leaves only the temporary files; on restart no batch
    is logged, so Spark verifies that the checkpoint is new, finds
    ``offsets`` not empty and refuses to start, on every later attempt
    (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``, from
    ``MicroBatchExecution.verifyNewCheckpointDirectory``). Seen when
    `tests/test_crash_recovery.py` killed ``wid run`` in that instant. Such
    files are never read, and nothing was processed: deleting them is what
    Spark's message asks for, limited to this case. Only when every file in
    ``offsets`` is such a temporary file; works on any Hadoop file system."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    offsets = jvm.org.apache.hadoop.fs.Path(checkpoint, "offsets")
    fs = offsets.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(offsets):
        return []
    names = [status.getPath().getName() for status in fs.listStatus(offsets)]
    if any(not (n.startswith(".") and n.endswith((".tmp", ".tmp.crc"))) for n in names):
        return []
    for name in names:
        fs.delete(jvm.org.apache.hadoop.fs.Path(offsets, name), False)
    return names


def start(output: DataFrame, checkpoint: str, handle: Handler, trigger: dict[str, Any],
          name: str | None = None) -> StreamingQuery:
    """Start `output` (append mode) with `handle` called on each
    micro-batch. `trigger` is passed to Spark's ``DataStreamWriter.trigger``
    (``{"availableNow": True}``, ``{"processingTime": "10 seconds"}``, ...)."""
    discard_interrupted_first_offset(output.sparkSession, checkpoint)
    writer = (output.writeStream.outputMode("append").foreachBatch(handle)
              .option("checkpointLocation", checkpoint).trigger(**trigger))
    return writer.queryName(name).start() if name else writer.start()


__all__ = ["BatchTally", "Handler", "discard_interrupted_first_offset", "start"]
