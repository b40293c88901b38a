"""Removing the WID operator's host-local state cache
(`wid.kernels.operator.state_cache`) when its query ends.

The cache of one operator plan lives in a directory named by the plan's
cache id under each executor's work directory, and each shard names its
directory with its counts of every micro-batch (``cache_dir`` in the shards'
JSON, which reaches the driver through Spark's observed metrics,
`wid.pipelines.observed`). When the query ends, a small Spark job removes
them: each task removes its executor's directory of the plan and the
reported ones on its host, and says which. Spark offers a job's first
tasks to every free executor, so one round usually reaches every host;
rounds repeat, with more tasks, while a reported directory remains, a
bounded number of times (an executor lost since holds nothing to remove). Everything goes through
DataFrames, so it runs on Spark Connect too.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable

from pyspark.sql import SparkSession

from wid.kernels.operator.state_cache import dropping
from wid.spark.operator import processor
from wid.spark.panes import partitions_for_rows
from wid.spark.shipping import ship

LOG = logging.getLogger("wid")


def cache_dirs(stats: Iterable[str]) -> set[str]:
    """The cache directories the shards' JSON counts name."""
    return {d["cache_dir"] for d in map(json.loads, stats) if d.get("cache_dir")}


def drop_cache_dirs(spark: SparkSession, cache_id: str, reported: set[str], rounds: int = 3) -> set[str]:
    """Remove plan `cache_id`'s cache on every executor a task reaches, and
    the `reported` directories on whichever hosts hold them; returns those
    of `reported` no task found, after `rounds` rounds."""
    left = set(reported)
    tasks = partitions_for_rows(spark)
    for i in range(rounds):
        if i and not left:
            break
        ship(processor)
        remove = functools.partial(dropping, cache_id=cache_id, directories=sorted(left), work_dir=processor.work_dir)
        left -= {r[0] for r in spark.range(0, tasks, 1, tasks).mapInArrow(remove, "removed string").collect()}
        tasks *= 2
    if left:
        LOG.info("state cache directories not found to remove (their executors may be gone): %s", sorted(left))
    return left


__all__ = ["cache_dirs", "drop_cache_dirs"]
