"""A Python worker gives back the memory a task freed (`wid.kernels.memory`):
Spark reuses the worker, so what its allocators keep stays resident."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.memory import release

MB = 1 << 20


def _rss() -> int:
    """This process's resident bytes (Linux: /proc, which every leg's environment has, unlike psutil)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_what_a_task_freed_is_resident_no_more_after_release() -> None:
    release()
    before = _rss()
    values = pa.array(np.arange(32 * MB, dtype=np.int64))  # 256 MB from NumPy, then as much in Arrow's pool
    doubled = pc.multiply(values, 2)
    assert _rss() > before + 384 * MB
    del values, doubled
    release()
    assert _rss() < before + 64 * MB
