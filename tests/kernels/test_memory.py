"""A Python worker gives back the memory a task freed (`wid.kernels.memory`):
Spark reuses the worker, so what its allocators keep stays resident."""

from __future__ import annotations

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.compute as pc

from wid.kernels.memory import release

MB = 1 << 20


def test_what_a_task_freed_is_resident_no_more_after_release() -> None:
    me = psutil.Process()
    release()
    before = me.memory_info().rss
    values = pa.array(np.arange(32 * MB, dtype=np.int64))  # 256 MB from NumPy, then as much in Arrow's pool
    doubled = pc.multiply(values, 2)
    assert me.memory_info().rss > before + 384 * MB
    del values, doubled
    release()
    assert me.memory_info().rss < before + 64 * MB
