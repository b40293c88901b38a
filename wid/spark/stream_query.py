"""Starting a native streaming window query and tallying its micro-batches
(the accounting identity of DESIGN.md section 5, per micro-batch).

`start` writes the window stage through ``foreachBatch`` (every wid sink is a
batch writer that upserts by natural key, so a replayed batch overwrites
itself). `Tallier` turns each micro-batch's progress into counts, reading
the state store for exact late rows (`wid.spark.accounting`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from wid.spark import accounting
from wid.spark.streaming import CLOSED, GOOD, REJECTED
from wid.spec.window import Window

Handler = Callable[[DataFrame, int], None]


@dataclass(frozen=True)
class BatchTally:
    """One micro-batch: rows read (good plus rejected; Spark's own
    ``numInputRows`` counts a source twice when the dead letters are written
    in the same query), good rows (the rest were rejected), late rows (of
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


def start(output: DataFrame, window: Window, checkpoint: str, handle: Handler, trigger: dict[str, Any],
          name: str | None = None) -> StreamingQuery:
    """Start `output` (from `wid.window_result` on a stream) with `handle`
    called on each micro-batch. `trigger` is passed to Spark's
    ``DataStreamWriter.trigger`` (``{"availableNow": True}``,
    ``{"processingTime": "10 seconds"}``, ...)."""
    from wid.spark.streaming import output_mode

    discard_interrupted_first_offset(output.sparkSession, checkpoint)
    writer = (output.writeStream.outputMode(output_mode(window)).foreachBatch(handle)
              .option("checkpointLocation", checkpoint).trigger(**trigger))
    return writer.queryName(name).start() if name else writer.start()


def _observed(progress: Any, name: str) -> int:
    metrics = (progress.get("observedMetrics") if isinstance(progress, dict) else progress.observedMetrics) or {}
    row = metrics.get(name)
    value = None if row is None else row["rows"]
    return int(value or 0)


def _watermark_ms(progress: Any) -> int:
    from datetime import UTC, datetime, timedelta

    text = (progress["eventTime"] or {}).get("watermark")
    if not text:
        return 0
    since = datetime.fromisoformat(text.replace("Z", "+00:00")) - datetime(1970, 1, 1, tzinfo=UTC)
    return since // timedelta(milliseconds=1)  # exact: no float seconds


class Tallier:
    """Tallies the micro-batches of one query, in order, with late rows
    counted exactly. Remembers the rows held in state after the last batch
    and the first stage's operator id, so each batch reads the state store
    once."""

    def __init__(self, spark: SparkSession, checkpoint: str) -> None:
        self.spark, self.checkpoint = spark, checkpoint
        self.stage: int | None = None
        self.held: dict[int, int] = {}

    def _held(self, batch: int) -> int:
        if batch not in self.held:
            assert self.stage is not None
            self.held = {batch: accounting.state_rows(self.spark, self.checkpoint, self.stage, batch)}
        return self.held[batch]

    def batch(self, progress: Any) -> BatchTally:
        """The counts of the micro-batch `progress` describes (a
        ``StreamingQueryProgress``)."""
        batch = int(progress["batchId"])
        good = _observed(progress, GOOD)
        if self.stage is None:
            self.stage = accounting.first_stage(self.spark, self.checkpoint)
        added = 0
        if self.stage is not None:
            before = self._held(batch - 1)
            added = accounting.accepted(self._held(batch), before, _observed(progress, CLOSED))
        rows_in = good + _observed(progress, REJECTED)
        duration = int((progress["durationMs"] or {}).get("triggerExecution", 0))
        return BatchTally(batch, rows_in, good, good - added, added, _watermark_ms(progress), duration)


__all__ = ["BatchTally", "Handler", "Tallier", "discard_interrupted_first_offset", "start"]
