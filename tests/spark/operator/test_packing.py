"""Blobs between Spark and the WID operator stay bounded: the pack step and
the operator's output split a shard's rows into blobs of at most
`chunk_rows` rows, and nothing is lost or duplicated on the way (checked
against the rows put in, without Spark)."""

from __future__ import annotations

import json

import pyarrow as pa

from wid.spark.operator.output import KIND, STATS, unpack
from wid.spark.operator.packing import BATCH_MS, DATA, KEY, PACKED, SHARD, SUMMARY, pack
from wid.spark.operator.processor import LATE, OUTPUT_DDL, RETRACTIONS, WINDOWS, packed_output
from wid.spark.operator.shard import ShardOutput
from wid.spark.operator.tables import PTIME, PUNCT, SRC, TS, from_bytes


def _input(shards: list[int]) -> pa.Table:
    n = len(shards)
    return pa.table({"v": list(range(n)), TS: [1000 * i for i in range(n)], SRC: ["s"] * n, PUNCT: [False] * n,
                     PTIME: pa.nulls(n, pa.int64()), SHARD: shards, BATCH_MS: [7] * n})


def test_pack_splits_each_shard_into_bounded_blobs_and_gives_every_shard_the_summary() -> None:
    shards = [0, 2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 2, 0]  # shard 0: 10 rows, shard 1: none, shard 2: 3 rows
    out = pa.Table.from_batches(list(pack(iter(_input(shards).to_batches(max_chunksize=5)), [10, 11, 12], False)),
                                schema=PACKED)
    by_key: dict[int, list[pa.Table]] = {}
    for key, blob, summary in zip(*(out.column(c).to_pylist() for c in (KEY, DATA, SUMMARY)), strict=True):
        assert json.loads(summary)["sources"]["s"][0] == 12_000  # the partition's largest event time, on every row
        by_key.setdefault(key, []).append(from_bytes(blob))
    assert sorted(by_key) == [10, 11, 12]
    for key, shard in ((10, 0), (11, 1), (12, 2)):
        got = pa.concat_tables(by_key[key]).column("v").to_pylist()
        assert got == [i for i, s in enumerate(shards) if s == shard]
    # the default bound (65,536 rows) holds each shard in one blob; 4 rows a blob splits shard 0 in 3
    small = pa.Table.from_batches(list(pack(iter(_input(shards).to_batches()), [10, 11, 12], False, chunk_rows=4)),
                                  schema=PACKED)
    sizes = [(k, from_bytes(b).num_rows) for k, b in zip(small.column(KEY).to_pylist(), small.column(DATA).to_pylist(),
                                                          strict=True)]
    assert sorted(sizes) == [(10, 2), (10, 4), (10, 4), (11, 0), (12, 3)]


def test_operator_output_travels_in_bounded_blobs_and_unpacks_whole() -> None:
    windows = pa.table({"k": list(range(10)), "n": [2 * i for i in range(10)]})
    late = pa.table({"k": [100, 101, 102]})
    stats = {"rows": 13}
    frame = packed_output(5, ShardOutput(windows=windows, retractions=None, late=late, stats=stats), chunk_rows=4)
    assert list(frame[KEY]) == [5, 5, 5]
    for column, rows in ((WINDOWS, [4, 4, 2]), (LATE, [3, 0, 0]), (RETRACTIONS, [0, 0, 0])):
        assert [0 if b is None else from_bytes(b).num_rows for b in frame[column]] == rows
    packed = pa.RecordBatch.from_pandas(frame, preserve_index=False)
    schema = pa.schema([(KIND, pa.string()), ("k", pa.int64()), ("n", pa.int64()), (STATS, pa.string())])
    rows = pa.Table.from_batches(list(unpack(iter([packed]), schema)), schema=schema).to_pylist()
    assert sorted((r[KIND], r["k"], r["n"]) for r in rows if r[KIND] == "w") == \
        [("w", i, 2 * i) for i in range(10)]
    assert sorted(r["k"] for r in rows if r[KIND] == "l") == [100, 101, 102]
    assert [json.loads(r[STATS]) for r in rows if r[KIND] == "s"] == [stats]  # one stats row per shard and batch
    assert OUTPUT_DDL.split()[0] == KEY
