"""The fused pane pass alone (`wid.kernels.pane_reduce.merge_rows`, no
Spark), with each window's pane range found by prefix counts over the
(key, pane) cells against binary searches, side by side.

    python -m benchmarks.fused_kernel [--rows 720000] [--keys 500] [--repeats 7]

Data: `rows` rows of one partition as the fused plan receives them (key,
1-minute pane, value; Arrow batches of 10,000), `keys` keys over one day in
no order, so about one row per key and pane at the defaults (what a task
of the density benchmark's 1-row case holds). Query: hopping 60 min / 1
min, count, sum and max. ``searched`` forces the binary searches
(`pane_merge.DENSE_FACTOR` and `DENSE_SLACK` at 0). Both must give the
same windows; prints the median seconds of each and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from wid.kernels import pane_merge as pm
from wid.kernels import pane_reduce as pr

FIELDS = (pm.FieldOp("count", (), ("n",)), pm.FieldOp("sum", ("v",), ("s",)), pm.FieldOp("max", ("v",), ("hi",)))
SPEC = pm.MergeSpec(keys=("k",), pane="pane", shape="sliding", fields=FIELDS, length=60, hop=1, offset=0)


def batches(rows: int, keys: int) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(1)
    table = pa.table({"k": rng.integers(0, keys, rows).astype(np.int32), "pane": rng.integers(0, 1440, rows),
                      "v": rng.random(rows)})
    return table.to_batches(max_chunksize=10_000)


def searched(run: Callable[[], pa.RecordBatch]) -> pa.RecordBatch:
    factor, slack = pm.DENSE_FACTOR, pm.DENSE_SLACK
    pm.DENSE_FACTOR, pm.DENSE_SLACK = 0, 0
    try:
        return run()
    finally:
        pm.DENSE_FACTOR, pm.DENSE_SLACK = factor, slack


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=720_000)
    parser.add_argument("--keys", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    data = batches(args.rows, args.keys)

    def run() -> pa.RecordBatch:
        return next(pr.merge_rows(iter(data), SPEC))
    variants = {"counted": run, "searched": lambda: searched(run)}
    assert variants["counted"]().equals(variants["searched"]()), "the two ways disagree"
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.repeats):
        for name, variant in variants.items():
            started = time.perf_counter()
            variant()
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"{args.rows:,} rows, {args.keys:,} keys, medians of {args.repeats}")
    for name, seconds in medians.items():
        print(f"  {name:9s} {seconds:.3f} s")
    print(f"  searched / counted {medians['searched'] / medians['counted']:.2f}x")


if __name__ == "__main__":
    main()
