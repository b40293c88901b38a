"""The streaming window join on Spark Structured Streaming (real RocksDB
state store, real checkpoints) against the streaming oracle: both sides land
in one JSON file per micro-batch (``maxFilesPerTrigger = 1``; two landing
directories would not keep the sides' micro-batches aligned across a
restart), the query runs with an available-now trigger, stops, and resumes
from its checkpoint for the rest of the stream."""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import wid
from tests.kernels.operator.test_join_engine import LEFT, RIGHT, stream
from tests.spark.join_compare import assert_same_join
from tests.spark.operator.spark_run import ddl, land
from wid.errors import ConfigError
from wid.kernels.operator.output import KIND, STATS
from wid.semantics.stream_types import BatchResult, Emission, LateRow, MicroBatch
from wid.semantics.timeunits import datetime_to_us
from wid.semantics.window_join_stream import run_join_stream
from wid.spark.api import join_result
from wid.spark.compile import compile_join
from wid.spark.operator.join_query import fired_rows
from wid.spec import Aggregation
from wid.spec.join import SYSTEM_TIME, ColumnMetric, WindowJoin

BOTH = pa.schema([*LEFT, *[f for f in RIGHT if f.name not in LEFT.names], ("side", pa.string())])


def _tagged(batches: list[MicroBatch]) -> list[MicroBatch]:
    return [MicroBatch([(s, {**r, "side": s}) for s, r in b.rows], b.batch_ms) for b in batches]


def run_on_spark(spark: Any, root: Path, batches: list[MicroBatch], join: WindowJoin, resume_at: int
                 ) -> tuple[list[BatchResult], list[int]]:
    """Run `join` on Spark over `batches`: the first `resume_at` in one
    query, the rest in a second one on the same checkpoint. Both sides are
    read from one landing directory (a file per micro-batch, rows tagged
    with their side), so each micro-batch holds exactly one batch's rows of
    both sides. Also returns each micro-batch's timestamp (epoch ms, from
    the shards' counts)."""
    land(root / "land", _tagged(batches[:resume_at]))
    rows = spark.readStream.schema(ddl(BOTH)).option("maxFilesPerTrigger", 1).json(str(root / "land"))
    left = rows.where("side = 'left'").select(*LEFT.names)
    right = rows.where("side = 'right'").select(*RIGHT.names)
    result = compile_join(left, right, join)
    assert result.operator is not None
    seen: dict[int, list[dict[str, Any]]] = defaultdict(list)

    def handle(frame: Any, batch_id: int) -> None:
        frame = frame.cache()
        seen[batch_id] = [{"fired": None, **r.asDict()} for r in frame.where(f"{KIND} != 'w'").collect()]
        seen[batch_id] += [{"fired": r.asDict()} for r in fired_rows(frame, join, LEFT.names).collect()]
        frame.unpersist()

    for phase in (0, 1):
        if phase:
            for i, b in enumerate(_tagged(batches)[resume_at:], start=resume_at):
                path = root / "land" / f"part-{i:04d}.json"
                path.write_text("".join(json.dumps(r) + "\n" for _, r in b.rows))
                os.utime(path, (1_000_000 + i, 1_000_000 + i))  # files are read in modification-time order
        query = (result.operator.writeStream.foreachBatch(handle).option("checkpointLocation", str(root / "ck"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
    ran = [b for b in sorted(seen) if any(r["fired"] is None and r[KIND] == "s" for r in seen[b])]
    stamps = [max(json.loads(r[STATS])["batch_ms"] for r in seen[b] if r["fired"] is None and r[KIND] == "s")
              for b in ran]
    return [_result(seen[b], join) for b in ran], stamps  # (a micro-batch without rows runs no shard)


def _result(rows: list[dict[str, Any]], join: WindowJoin) -> BatchResult:
    out = BatchResult()
    for r in rows:
        if r["fired"] is not None:
            row = {c: datetime_to_us(v) if c == SYSTEM_TIME else v for c, v in r["fired"].items()}
            out.emitted.append(Emission({c: join.null_fill.get(c) if v is None and c in join.null_fill else v
                                         for c, v in row.items()}))
        elif r[KIND] == "l":
            prefix = "_wid_o_l_" if r["_wid_src"] == "left" else "_wid_o_r_"
            out.late.append(LateRow(r["_wid_src"], {c[len(prefix):]: v for c, v in r.items() if c.startswith(prefix)},
                                    r["_wid_reason"]))
        elif r[KIND] == "s":
            out.rows_late_dropped += json.loads(r[STATS])["late_dropped"]
    return out


CASES = {
    "minus3_plus2_delay_dlq": WindowJoin(
        window=(-3, 2), matching_column="k", time_column="t", time_unit="ms", max_delayed_time=10, late_data="dlq",
        garbage_size=2, null_fill={"note": "-"},
        metrics=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("std", "v", as_="sd"),
                 Aggregation("last", "w", as_="last"), Aggregation("med", "v", as_="med"), ColumnMetric("v", as_="vs"))),
    "special_drop": WindowJoin(
        window=(0, 0), matching_column="k", time_column="t", time_unit="ms",
        metrics=(Aggregation("count", as_="n"), Aggregation("avg", "v", as_="avg"),
                 Aggregation("corr", "v", as_="c", column2="w"), ColumnMetric("w", as_="ws"))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_spark_equals_the_streaming_oracle_across_a_restart(spark: Any, tmp_path: Path, name: str) -> None:
    join = CASES[name]
    batches = [b for b in stream(random.Random(7), 20) if b.rows][:6]
    batches.append(MicroBatch([("right", {"t": 1000, "k": k, "v": None, "w": None}) for k in "ABC"], 99))  # flush
    want = run_join_stream(batches, join, left_columns=LEFT.names)
    got, _ = run_on_spark(spark, tmp_path, batches, join, resume_at=len(batches) // 2)
    assert len(got) == len(want)
    assert sum(len(r.emitted) for r in want) > 0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.rows_late_dropped == w.rows_late_dropped, f"batch {i}"
        late = sorted((x.source, repr(sorted(x.row.items())), x.reason) for x in g.late)
        assert late == sorted((x.source, repr(sorted(x.row.items())), x.reason) for x in w.late), f"batch {i}"
        assert_same_join([e.row for e in g.emitted], [e.row for e in w.emitted], join)


def test_use_system_time_joins_on_the_micro_batch_timestamps(spark: Any, tmp_path: Path) -> None:
    """Window (0, 0) on arrival time: a left row gets the right rows of its
    key that arrived since its key's previous left row, before its own
    micro-batch, and fires in its own micro-batch if a right row of its key
    arrives with it. The oracle replays the micro-batches with the
    timestamps Spark gave them (read back from the shards' counts)."""
    join = WindowJoin(window=(0, 0), matching_column="k", use_system_time=True,
                      metrics=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")))
    batches = [b for b in stream(random.Random(3), 60) if b.rows][:5]
    got, stamps = run_on_spark(spark, tmp_path, batches, join, resume_at=len(batches))
    want = run_join_stream([MicroBatch(b.rows, ms) for b, ms in zip(batches, stamps, strict=True)], join,
                           left_columns=LEFT.names)
    assert len(stamps) == len(batches) and sum(len(r.emitted) for r in want) > 0
    for g, w in zip(got, want, strict=True):
        assert_same_join([e.row for e in g.emitted], [e.row for e in w.emitted], join)


def test_a_stream_joined_with_a_batch_table_is_refused(spark: Any, tmp_path: Path) -> None:
    land(tmp_path / "l", [MicroBatch([("left", {"t": 1, "k": "A", "id": 1, "note": None})])])
    left = spark.readStream.schema(ddl(LEFT)).json(str(tmp_path / "l"))
    right = spark.createDataFrame([], ddl(RIGHT))
    with pytest.raises(ConfigError, match="right"):
        wid.window_join(left, right, window=(0, 0), metrics=[Aggregation("count", as_="n")], matching_column="k",
                        time_column="t", time_unit="ms")
    with pytest.raises(ConfigError, match="sort_by_time"):
        join_result(left, left.select("t", "k", "id", "note"),
                    WindowJoin(window=(0, 1), matching_column="k", time_column="t", time_unit="ms", sort_by_time=True,
                               metrics=(Aggregation("count", as_="n"),)))
