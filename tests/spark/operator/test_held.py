"""`wid.spark.operator.rows.held`, the one job a stream's writer runs before
it writes (`wid.pipelines.write.stream_writer`): what it says a micro-batch
holds must be what pandas counts in the same rows, computed apart."""

from __future__ import annotations

import random
from typing import Any

import pandas as pd
import pytest

from wid.kernels.fields import END, START
from wid.spark.operator.rows import (
    COUNTS_ROW,
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    WINDOW_ROW,
    held,
)

KINDS = (WINDOW_ROW, RETRACTION_ROW, LATE_ROW, REJECTED_ROW, COUNTS_ROW)


def operator_rows(seed: int, n: int) -> pd.DataFrame:
    """`n` rows of random kinds; window rows over a few windows (bounds in
    µs), the other kinds with bounds or NULL, as the operator leaves them."""
    draw = random.Random(seed)
    rows = []
    for _ in range(n):
        kind = draw.choice(KINDS)
        start = draw.randrange(5) * 60_000_000 if kind == WINDOW_ROW or draw.random() < 0.5 else None
        rows.append({KIND: kind, START: start, END: None if start is None else start + 60_000_000})
    return pd.DataFrame(rows, columns=[KIND, START, END]).astype({START: "Int64", END: "Int64"})


@pytest.mark.parametrize(("seed", "n", "partitions"), [(1, 200, 3), (2, 7, 1), (3, 0, 2)])
def test_held_is_what_pandas_counts(spark: Any, seed: int, n: int, partitions: int) -> None:
    rows = operator_rows(seed, n)
    frame = spark.createDataFrame(rows, f"{KIND} string, {START} long, {END} long").repartition(partitions)
    windows = rows[rows[KIND] == WINDOW_ROW]
    fullest = int(windows.groupby([START, END]).size().max()) if len(windows) else 0
    found = held(frame, by_window=True)
    assert found.per_kind == {k: int(v) for k, v in rows.groupby(KIND).size().items()}
    assert found.fullest_window == fullest
    assert found.of(REJECTED_ROW, LATE_ROW) == int(rows[KIND].isin([REJECTED_ROW, LATE_ROW]).sum())
    unbounded = held(frame, by_window=False)
    assert (unbounded.per_kind, unbounded.fullest_window) == (found.per_kind, 0)
