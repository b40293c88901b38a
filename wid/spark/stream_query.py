"""Starting a streaming query of wid's: the WID operator's rows written
through ``foreachBatch`` (every wid sink is a batch writer that upserts by
natural key, so a replayed micro-batch overwrites itself), on a checkpoint
a crash during its very first offset-log write cannot leave unusable.
Everything here goes through the session's public API, so it serves a
Spark Connect session as it does a classic one."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from wid.errors import MissingDependencyError
from wid.versions import pip_install

Handler = Callable[[DataFrame, int], None]


VERIFY_NEW = "spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart"


def visible_files(spark: SparkSession, path: str) -> list[str]:
    """The files under `path` (recursively) that Spark's file sources list:
    not hidden (names starting with ``.`` or ``_``). None there, or no
    `path`: []. Listed through Spark, so any file system serves, on Spark
    Connect too."""
    try:
        return list(spark.read.option("recursiveFileLookup", "true").text(path).inputFiles())
    except Exception as err:  # noqa: BLE001 - a path not there yet is the only expected failure
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return []
        raise


def never_logged(spark: SparkSession, checkpoint: str) -> bool:
    """Whether `checkpoint` holds no logged micro-batch, no commit and no
    state: at most the hidden temporary files of an offset-log write a crash
    interrupted (see `start`)."""
    root = checkpoint.rstrip("/")
    return not any(visible_files(spark, f"{root}/{part}") for part in ("offsets", "commits", "state"))


def start(output: DataFrame, checkpoint: str, handle: Handler, trigger: dict[str, Any],
          name: str | None = None) -> StreamingQuery:
    """Start `output` (append mode) with `handle` called on each
    micro-batch. `trigger` is passed to Spark's ``DataStreamWriter.trigger``
    (``{"availableNow": True}``, ``{"processingTime": "10 seconds"}``, ...).

    Spark writes ``offsets/0`` as a hidden temporary file renamed into place
    when complete. A process killed before the rename leaves only that
    file; on restart no batch is logged, so Spark verifies that the
    checkpoint is new, finds ``offsets`` not empty and refuses to start, on
    every later attempt (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``).
    Such a file is never read, and nothing was processed: when the
    checkpoint holds no logged batch, no commit and no state
    (`never_logged`), the query starts with that check off, which is what
    Spark's message asks for, limited to this case. The check stays on
    otherwise (it guards against two queries sharing a checkpoint)."""
    spark = output.sparkSession
    writer = (output.writeStream.outputMode("append").foreachBatch(handle)
              .option("checkpointLocation", checkpoint).trigger(**trigger))
    if name:
        writer = writer.queryName(name)
    if not (spark.conf.isModifiable(VERIFY_NEW) and never_logged(spark, checkpoint)):
        return _started(writer)
    before = spark.conf.get(VERIFY_NEW, None)
    spark.conf.set(VERIFY_NEW, "false")
    try:
        query = _started(writer)
        _past_initialization(query)  # the query reads the setting then, from the session
    finally:
        if before is None:
            spark.conf.unset(VERIFY_NEW)
        else:
            spark.conf.set(VERIFY_NEW, before)
    return query


SERVER_PYTHON_FIX = (f"install it there: {pip_install('server')} (wid with pyspark[connect]), or point the server's "
                     "PYSPARK_PYTHON at a Python that has them")


def _started(writer: DataStreamWriter) -> StreamingQuery:
    """``writer.start()``. On Spark Connect the server runs `handle` in a
    Python process of its own, which imports the Connect client and wid; when
    that Python lacks them the process dies and Spark reports only that it
    never connected back: raises MissingDependencyError naming the fix."""
    try:
        return writer.start()
    except Exception as err:
        if "Python worker failed to connect back" not in str(err):
            raise
        raise MissingDependencyError("a Python with wid and pyspark[connect] on the Spark Connect server "
                                     "(it runs each stream's foreachBatch writer)", SERVER_PYTHON_FIX) from err


def _past_initialization(query: StreamingQuery, poll_s: float = 0.01) -> None:
    """Wait until `query` has found where to start (Spark's status message
    leaves ``Initializing sources`` once the start offsets are known, after
    its checkpoint checks) or has stopped."""
    while query.isActive and query.status["message"] == "Initializing sources":
        time.sleep(poll_s)


def logged_batch(spark: SparkSession, checkpoint: str, batch_id: int) -> dict[str, Any] | None:
    """Micro-batch `batch_id`'s entry in the checkpoint's offset log, which
    a replay reuses: ``batchTimestampMs`` (when it first started, epoch ms),
    ``batchWatermarkMs`` and ``conf`` (the settings Spark fixes for the
    query, ``spark.sql.shuffle.partitions`` among them); None when the log
    has no such entry. Read through Spark, so any file system serves."""
    try:
        lines = [r[0] for r in spark.read.text(f"{checkpoint.rstrip('/')}/offsets/{batch_id}").collect()]
    except Exception as err:  # noqa: BLE001 - a missing entry is the only expected failure
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return None
        raise
    return dict(json.loads(lines[1])) if len(lines) > 1 else None


__all__ = ["VERIFY_NEW", "Handler", "logged_batch", "never_logged", "start", "visible_files"]
