"""Giving a Python worker's freed memory back to the operating system.

Spark reuses its Python workers (``spark.python.worker.reuse``), so a
worker's resident memory after a task is what the next task, and every
idle moment in between, keeps. Two allocators hold freed memory for reuse
instead of returning it: Arrow's memory pool (mimalloc or jemalloc, which
return it only after a delay, or never while the process sleeps) and
glibc's ``malloc`` (Python's large objects, pandas and NumPy buffers), whose
heap top and arenas stay mapped until ``malloc_trim``. A worker that packed
or ran a shard of a micro-batch that opened millions of keys otherwise
keeps that micro-batch's high-water mark for the rest of the query. PySpark
may still hold a call's input (its Arrow batches, its frames) when the
call's function returns, so wid's executor functions release both when they
start (what the worker's previous call left) and when they end. Runs on
executors: pyarrow and the standard library.
"""

from __future__ import annotations

import ctypes

import pyarrow as pa


def release() -> None:
    """Return the memory freed so far to the operating system: Arrow's
    pool's unused memory, then the C heap's (where glibc's
    ``malloc_trim`` exists). Costs about a millisecond; call it when a
    task's large objects are gone."""
    pa.default_memory_pool().release_unused()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # the process's own symbols: no library lookup
    if trim is not None:
        trim(0)


__all__ = ["release"]
