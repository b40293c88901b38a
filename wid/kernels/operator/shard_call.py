"""One call of the WID operator's processor: a shard's packed rows for one
micro-batch in, the operator's output rows out (`wid.kernels.operator.output`).

This is the part of the processor that needs numpy, pyarrow and pandas; the
Spark-facing `wid.spark.operator.processor.WidProcessor` carries it pickled
and unpickles it at its first call (see there why). Runs on executors.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa

from wid.kernels.memory import release
from wid.kernels.operator.engines import make_engine
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.output import frames
from wid.kernels.operator.packing import DATA, SUMMARY, received
from wid.kernels.operator.shard import ShardOutput, Store, run_batch
from wid.kernels.operator.state_cache import CachedStore, cache_root, uncached
from wid.semantics.watermark import SourceBatch


class ShardCall:
    """Runs `wid.kernels.operator.shard.run_batch` with the window's engine for
    one shard and micro-batch; returns rows in `output` (`emitting`), and
    keeps a host-local copy of the shard's state unless told not to
    (`wid.kernels.operator.state_cache`)."""

    def __init__(self, spec: OperatorSpec) -> None:
        self.spec = spec
        self.output = pa.schema([])
        self.cache_id: str | None = None

    def emitting(self, schema: pa.Schema, cache_id: str | None = None) -> ShardCall:
        """A copy that returns its rows in `schema` (the plan's output
        columns) and, given a `cache_id` (the plan's), caches state on the
        host, in that plan's directory."""
        bound = copy.copy(self)
        bound.output, bound.cache_id = schema, cache_id
        return bound

    def handle(self, store: Store, packed: Iterator[pd.DataFrame], work_dir: str | None = None,
               shard: int | None = None) -> Iterator[pd.DataFrame]:
        """The shard's output frames for its `packed` frames (columns `DATA`
        and `SUMMARY`, `wid.kernels.operator.packing`); `work_dir` is the
        executor's work directory, which holds the host-local state cache;
        the shard's counts name the cache's directory (``cache_dir``), the
        `shard`, the rows it received (``received``: rows, and partials
        combined before the shuffle, `wid.kernels.operator.combine`, where
        ``rows`` counts the rows they stand for), how long its call took
        from its first frame to its output (``took_ms``: how the shards
        share a micro-batch's work, `benchmarks.skew_scale`) and how long it
        waited for that first frame (``waited_ms``: the first call of a
        task waits for the task's input, its shuffle read and Spark's sort
        by shard, which is the task's and not the shard's work), and the
        Python worker (``worker``, its process id) and the instant
        (``started_ms``, epoch milliseconds) of that first frame, which
        say which call came first in its task."""
        called = time.perf_counter()
        release()  # what the worker's previous call left once PySpark let go of its frames
        blobs: list[bytes] = []
        summaries: list[str] = []
        started = None
        for frame in packed:
            started = started or time.perf_counter()
            blobs.extend(frame[DATA])
            summaries.extend(frame[SUMMARY])
        started = started or time.perf_counter()
        rows, sources, batch_ms = received(blobs, summaries)  # over the blobs' buffers, not a copy
        root = cache_root(work_dir, self.cache_id) if self.cache_id else None
        cached = None if root is None else CachedStore(store, root)
        out = self.run(cached or uncached(store), rows, sources, batch_ms)
        if cached is not None:
            cached.finish()
            out.stats["cache_dir"] = str(root)  # for its removal when the query ends
        out.stats["shard"], out.stats["received"] = shard, rows.num_rows
        out.stats["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
        out.stats["waited_ms"] = round((started - called) * 1000, 1)
        out.stats["worker"] = os.getpid()
        out.stats["started_ms"] = round(time.time() * 1000 - (time.perf_counter() - started) * 1000, 1)
        del blobs, rows, cached  # all but the output, before it leaves
        yield from frames(out, self.output)
        del out
        release()  # the worker stays for the next task: what this call held goes back (`wid.kernels.memory`)

    def run(self, store: Store, rows: pa.Table, sources: dict[str, SourceBatch], batch_ms: int) -> ShardOutput:
        """One shard's micro-batch: `run_batch` with the window's engine."""
        return run_batch(self.spec, store, make_engine(self.spec, store), rows, sources, batch_ms)


__all__ = ["ShardCall"]
