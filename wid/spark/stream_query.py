"""Starting a streaming query of wid's: the WID operator's rows written
through ``foreachBatch`` (every wid sink is a batch writer that upserts by
natural key, so a replayed micro-batch overwrites itself), on a checkpoint
a crash during its very first offset-log write cannot leave unusable."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

Handler = Callable[[DataFrame, int], None]


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


def batch_timestamp_ms(spark: SparkSession, checkpoint: str, batch_id: int) -> int | None:
    """When micro-batch `batch_id` first started (epoch ms, from its entry
    in the checkpoint's offset log, which a replay reuses), or None when the
    log has no such entry. Read through Spark, so any file system serves."""
    try:
        lines = [r[0] for r in spark.read.text(f"{checkpoint.rstrip('/')}/offsets/{batch_id}").collect()]
    except Exception as err:  # noqa: BLE001 - a missing entry is the only expected failure
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return None
        raise
    return int(json.loads(lines[1])["batchTimestampMs"]) if len(lines) > 1 else None


def start(output: DataFrame, checkpoint: str, handle: Handler, trigger: dict[str, Any],
          name: str | None = None) -> StreamingQuery:
    """Start `output` (append mode) with `handle` called on each
    micro-batch. `trigger` is passed to Spark's ``DataStreamWriter.trigger``
    (``{"availableNow": True}``, ``{"processingTime": "10 seconds"}``, ...)."""
    discard_interrupted_first_offset(output.sparkSession, checkpoint)
    writer = (output.writeStream.outputMode("append").foreachBatch(handle)
              .option("checkpointLocation", checkpoint).trigger(**trigger))
    return writer.queryName(name).start() if name else writer.start()


__all__ = ["Handler", "batch_timestamp_ms", "discard_interrupted_first_offset", "start"]
