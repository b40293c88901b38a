"""PySpark's stateful APIs as the WID operator could use them: what each
costs a micro-batch doing nothing, over the same stream.

    python -m benchmarks.stateful_apis [--rows 2000000] [--keys 100] [--files 16] [--per-trigger 2]

The WID operator packs each micro-batch's rows into Arrow blobs, one row
per shard (`wid.kernels.operator.packing`), before
``transformWithStateInPandas``, because that API regroups its input row by
row. Spark 4.1 added the row-based ``transformWithState``, which Spark's
docs recommend at high key cardinality. Four do-nothing processors run
over the same micro-batches (the streaming scenario's landed files), each
keyed by shard (``pmod(k, shards)``), on the RocksDB state store the
operator uses, each to Spark's ``noop`` sink:

- ``floor``: ``transformWithStateInPandas`` over 1 row in 1,000
  (`benchmarks.harness.tws_floor`): Spark's cost of a Python stateful
  operator that is not work on rows;
- ``packed``: every row, packed into one Arrow blob per shard and
  partition (as the operator packs them), through
  ``transformWithStateInPandas``, which opens the blobs (what the operator
  pays before its work);
- ``pandas rows``: every row through ``transformWithStateInPandas``;
- ``row-based``: every row through ``transformWithState`` (Spark 4.1+).

Each runs once untimed (warm-up) then `repeats` times; printed: median
seconds, seconds per micro-batch and the ratio to ``floor``.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from benchmarks import data
from benchmarks.harness import available_now, machine, run_noop, save, session, tws_floor
from benchmarks.scenarios.streaming import landed
from wid.spark.operator.query import operator_layout


class IdleFrames(StatefulProcessor):
    """Reads its pandas frames, returns one row per group."""

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("seen", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        n = sum(len(frame) for frame in rows)
        yield pd.DataFrame({"g": [int(key[0])], "n": [n]})

    def close(self) -> None:
        pass


class IdleRows(StatefulProcessor):
    """Reads its Rows, returns one row per group."""

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("seen", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[Row], timerValues: Any) -> Iterator[Row]:
        n = sum(1 for _ in rows)
        yield Row(g=int(key[0]), n=n)

    def close(self) -> None:
        pass


def variants(source: Callable[[], DataFrame], groups: int) -> dict[str, Callable[[], DataFrame]]:
    """Each do-nothing query of the module docstring but the floor."""
    out = "g long, n long"

    def by_shard() -> Any:
        return source().withColumn("g", F.pmod(F.col("k"), F.lit(groups)).cast("long")).groupBy("g")

    def packed() -> DataFrame:
        blobs = source().withColumn("g", F.pmod(F.col("k"), F.lit(groups)).cast("long")).mapInArrow(
            functools.partial(pack_shards, shards=groups), "g long, blob binary")
        return blobs.groupBy("g").transformWithStateInPandas(IdleBlobs(), out, "Append", "None")
    return {"packed": packed,
            "pandas rows": lambda: by_shard().transformWithStateInPandas(IdleFrames(), out, "Append", "None"),
            "row-based": lambda: by_shard().transformWithState(IdleRows(), out, "Append", "None")}


def pack_shards(batches: Iterator[pa.RecordBatch], shards: int) -> Iterator[pa.RecordBatch]:
    """A partition's rows as one Arrow IPC blob per shard (column ``g``),
    as the operator packs them."""
    arrived = [b for b in batches if b.num_rows]
    if not arrived:
        return
    table = pa.Table.from_batches(arrived)
    for shard in range(shards):
        part = table.filter(pc.equal(table.column("g"), shard))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_table(part)
        yield pa.RecordBatch.from_pydict({"g": [shard], "blob": [sink.getvalue().to_pybytes()]})


class IdleBlobs(StatefulProcessor):
    """Opens its blobs (as the operator does), returns one row per group."""

    def init(self, handle: Any) -> None:
        self.state = handle.getValueState("seen", "n LONG")

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        n = sum(pa.ipc.open_stream(b).read_all().num_rows for frame in rows for b in frame["blob"])
        yield pd.DataFrame({"g": [int(key[0])], "n": [n]})

    def close(self) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--per-trigger", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    spark = session()
    where = landed(data.events(args.rows, args.keys), args.files)
    schema = spark.read.parquet(str(where)).schema
    batches = -(-(args.files + 1) // args.per_trigger)
    groups = int(spark.conf.get("spark.sql.shuffle.partitions"))

    def source() -> DataFrame:
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", args.per_trigger).parquet(str(where))

    work = Path(tempfile.mkdtemp(prefix="wid-stateful-apis-"))
    runs: dict[str, Callable[[int], float]] = {
        "floor": lambda i: tws_floor(source(), "k", groups, str(work / f"floor-{i}"))}
    def on_rocksdb(query: Callable[[], DataFrame], name: str, i: int) -> float:
        operator_layout(spark)  # the state store the operator runs on (available_now resets it after each run)
        return available_now(query(), lambda df, _: run_noop(df), str(work / f"{name}-{i}"))[0]

    for name, query in variants(source, groups).items():
        runs[name] = functools.partial(on_rocksdb, query, name)
    medians = {}
    for name, timed in runs.items():
        timed(-1)  # warm-up
        medians[name] = statistics.median(timed(i) for i in range(args.repeats))
        print(f"  {name:12s} {medians[name]:7.2f} s  {medians[name] / batches:6.3f} s a micro-batch  "
              f"{medians[name] / medians['floor']:5.2f}x the floor", flush=True)
    print(f"machine: {machine()}; {args.rows:,} rows, {args.keys} keys, {batches} micro-batches, {groups} shards")
    save("stateful_apis", {**vars(args), "seconds": medians, "micro_batches": batches})


if __name__ == "__main__":
    main()
