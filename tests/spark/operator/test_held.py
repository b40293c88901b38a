"""`wid.spark.operator.rows.held`, the one job a stream's writer runs before
it writes (`wid.pipelines.write.stream_writer`): it reads the shards' counts
rows alone, as the shards write them (`wid.kernels.operator.output.frames`),
and what it says a micro-batch holds must be what pandas counts in the
same rows, computed apart."""

from __future__ import annotations

import json
import random
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from wid.kernels.fields import END, START
from wid.kernels.operator.output import frames
from wid.kernels.operator.shard import ShardOutput
from wid.spark.operator.rows import (
    COUNTS_ROW,
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    STATS,
    WINDOW_ROW,
    held,
)

SCHEMA = pa.schema([(KIND, pa.string()), (START, pa.int64()), (END, pa.int64()), ("k", pa.int64()),
                    (STATS, pa.string())])


def shard_rows(draw: random.Random, shard: int, n: int, split: bool = True) -> list[dict[str, Any]]:
    """One shard's output rows through the shards' own `frames`: window rows
    over a few windows (bounds in µs), in two tables when `split`, and
    random numbers of retractions, late and rejected rows."""
    def table(rows: int) -> pa.Table:
        starts = [draw.randrange(4) * 60_000_000 for _ in range(rows)]
        return pa.table({START: pa.array(starts, pa.int64()), END: pa.array([s + 60_000_000 for s in starts]),
                         "k": pa.array([draw.randrange(1000) for _ in range(rows)], pa.int64())})
    cut = draw.randrange(n + 1) if split else n
    out = ShardOutput(windows=[table(cut), table(n - cut)], retractions=table(draw.randrange(3)),
                      late=table(draw.randrange(3)), rejected=table(draw.randrange(3)), stats={"shard": shard})
    return [r for f in frames(out, SCHEMA) for r in pa.Table.from_pandas(f, preserve_index=False).to_pylist()]


@pytest.mark.parametrize(("seed", "shards", "n"), [(1, 3, 60), (2, 1, 7), (3, 2, 0)])
def test_held_is_what_pandas_counts(spark: Any, seed: int, shards: int, n: int) -> None:
    draw = random.Random(seed)
    rows = pd.DataFrame([r for s in range(shards) for r in shard_rows(draw, s, n)], columns=SCHEMA.names)
    frame = spark.createDataFrame(rows, f"{KIND} string, {START} long, {END} long, k long, {STATS} string")
    found = held(frame.repartition(2))
    assert found.per_kind == {k: int(v) for k, v in rows.groupby(KIND).size().items()}
    assert found.of(REJECTED_ROW, LATE_ROW) == int(rows[KIND].isin([REJECTED_ROW, LATE_ROW]).sum())
    assert found.of(COUNTS_ROW) == shards and found.of(RETRACTION_ROW) == int((rows[KIND] == RETRACTION_ROW).sum())
    windows = rows[rows[KIND] == WINDOW_ROW]
    fullest = int(windows.groupby([START, END]).size().max()) if len(windows) else 0
    assert fullest <= found.fullest_at_most <= len(windows)  # a bound, never below the fullest window
    assert sorted(json.loads(t)["shard"] for t in found.stats) == list(range(shards))


def test_held_counts_the_fullest_window_exactly_when_one_table_holds_its_rows(spark: Any) -> None:
    rows = pd.DataFrame(shard_rows(random.Random(4), 0, 50, split=False), columns=SCHEMA.names)
    frame = spark.createDataFrame(rows, f"{KIND} string, {START} long, {END} long, k long, {STATS} string")
    windows = rows[rows[KIND] == WINDOW_ROW]
    assert held(frame).fullest_at_most == int(windows.groupby([START, END]).size().max())
