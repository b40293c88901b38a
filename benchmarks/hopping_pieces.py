"""Where the time of wid's hopping plan goes: the pieces of the issue 2
benchmark query, in one session, interleaved, with CPU seconds.

    python -m benchmarks.hopping_pieces [--rows 5000000] [--keys 1000] [--repeats 5]

Same data and query as `benchmarks.batch_windows` (hopping 60 min / 1 min,
count, sum, min, max, avg per key). Each round runs every variant once, in
turn, so that load from other processes spreads over all of them; medians
over the rounds are printed with the spread, as ratios to wid tumbling, in
wall-clock seconds and in CPU seconds of the JVM plus its Python workers
(less sensitive than wall time to other processes on a shared machine).

Variants:

- ``wid_tumbling``: the reference (one hash aggregate);
- ``wid_hopping``: the default plan (Spark's hash aggregate makes the
  panes, partial aggregation before its shuffle; the pane partials shuffled
  by key; one vectorised NumPy pass per partition merges them into windows
  by prefix sums and sparse tables);
- ``hopping_fused``: the previous plan, ``spark.wid.paneMerge = fused``
  (rows shuffled by key, one fused NumPy pass per partition: panes by
  bincount, then the same merge);
- ``hopping_jvm_merge``: Spark's pane aggregate, then the JVM block merge
  (``spark.wid.paneMerge = spark``, the plan for HLL sketches);
- ``hopping_size_checked``: the default plan under Spark's default
  ``spark.sql.execution.arrow.maxBytesPerBatch`` (a byte check after every
  row sent to Python), which wid's sessions turn off;
- ``shuffle_only``: the rows shuffled by key, nothing else;
- ``shuffle_to_python``: the rows shuffled and sent to Python, which drops
  them (the floor of any plan that merges in Python).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from benchmarks.batch_windows import checksum, queries
from benchmarks.harness import events, machine, run_noop, session
from wid.spark import panes
from wid.spark.arrow_merge import CONF
from wid.spark.spark_session import ARROW_MAX_BYTES

SPARK_DEFAULT_MAX_BYTES = str(64 << 20)  # Spark 4.3's default
PANE_MERGE = {"hopping_jvm_merge": "spark", "hopping_fused": "fused"}


def cpu_seconds() -> float | None:
    """CPU seconds used so far by this process and all its descendants
    (the JVM and its Python workers); None off Linux."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        stats = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    except OSError:
        return None
    mine, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [p for p, (pp, _) in stats.items() if pp == parent and p not in mine]
        mine.update(children)
        frontier += children
    return sum(stats[p][1] for p in mine if p in stats) / ticks


def _drop(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _ in batches:
        pass
    return iter(())


def variants(spark: Any, df: DataFrame) -> dict[str, Callable[[], DataFrame]]:
    qs = queries(df)

    shuffled = panes.by_key(df.select("k", F.unix_micros("ts").alias("t"), "v"), ["k"])
    to_python = shuffled.select("k", F.floor(F.col("t") / 60_000_000).cast("long").alias("pane"), "v")
    return {
        "wid_tumbling": qs["wid_tumbling"],
        "wid_hopping": qs["wid_hopping"],
        "hopping_fused": qs["wid_hopping"],
        "hopping_jvm_merge": qs["wid_hopping"],
        "hopping_size_checked": qs["wid_hopping"],
        "shuffle_only": lambda: shuffled,
        "shuffle_to_python": lambda: to_python.mapInArrow(_drop, T.StructType([T.StructField("k", T.IntegerType())])),
    }


def run(spark: Any, name: str, query: Callable[[], DataFrame]) -> tuple[float, float | None]:
    """Wall and CPU seconds of one run to the noop sink."""
    default = spark.conf.get(ARROW_MAX_BYTES)
    if name == "hopping_size_checked":
        spark.conf.set(ARROW_MAX_BYTES, SPARK_DEFAULT_MAX_BYTES)
    if name in PANE_MERGE:
        spark.conf.set(CONF, PANE_MERGE[name])
    try:
        cpu, started = cpu_seconds(), time.perf_counter()
        run_noop(query())
        wall, after = time.perf_counter() - started, cpu_seconds()
    finally:
        spark.conf.set(ARROW_MAX_BYTES, default)
        spark.conf.unset(CONF)
    return wall, None if cpu is None or after is None else after - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    spark = session()
    df = events(spark, args.rows, args.keys)
    qs = variants(spark, df)
    sums = {}
    for name in ("wid_hopping", *PANE_MERGE):
        spark.conf.set(CONF, PANE_MERGE.get(name, "arrow"))
        sums[name] = checksum(qs[name]())
    spark.conf.unset(CONF)
    assert len(set(sums.values())) == 1, sums
    walls: dict[str, list[float]] = {name: [] for name in qs}
    cpus: dict[str, list[float]] = {name: [] for name in qs}
    for name, q in qs.items():
        run(spark, name, q)  # warm up
    for _ in range(args.repeats):
        for name, q in qs.items():
            wall, cpu = run(spark, name, q)
            walls[name].append(wall)
            if cpu is not None:
                cpus[name].append(cpu)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys:,} keys, local[2], {args.repeats} rounds")
    ref_wall = statistics.median(walls["wid_tumbling"])
    ref_cpu = statistics.median(cpus["wid_tumbling"]) if cpus["wid_tumbling"] else None
    for name in qs:
        wall = statistics.median(walls[name])
        line = (f"  {name:22s} wall {wall:6.2f} s ({min(walls[name]):.2f}-{max(walls[name]):.2f}) "
                f"{wall / ref_wall:5.2f}x")
        if ref_cpu and cpus[name]:
            cpu = statistics.median(cpus[name])
            line += f"   cpu {cpu:6.2f} s ({min(cpus[name]):.2f}-{max(cpus[name]):.2f}) {cpu / ref_cpu:5.2f}x"
        print(line)


if __name__ == "__main__":
    main()
