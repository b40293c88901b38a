"""Data between Spark and the WID operator moves in bounded pieces: the pack
step splits a shard's rows into blobs of at most `chunk_rows` rows, the
operator returns its rows in frames of at most as many, and nothing is lost
or duplicated on the way (checked against the rows put in, without
Spark)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wid.kernels.fields import END, START
from wid.kernels.operator import output
from wid.kernels.operator.output import (
    COUNTS_ROW,
    EMITTED,
    FULLEST,
    KIND,
    STATS,
    frames,
    fullest_window,
)
from wid.kernels.operator.packing import BATCH_MS, DATA, KEY, PACKED, SHARD, SUMMARY, pack, received
from wid.kernels.operator.shard import ShardOutput
from wid.kernels.tables import PTIME, PUNCT, SRC, TS, from_bytes


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


def _by_key(out: pa.Table) -> dict[int, tuple[list[bytes], list[str]]]:
    found: dict[int, tuple[list[bytes], list[str]]] = {}
    for key, blob, summary in zip(*(out.column(c).to_pylist() for c in (KEY, DATA, SUMMARY)), strict=True):
        found.setdefault(key, ([], []))[0].append(blob)
        found[key][1].append(summary)
    return found


def test_columns_left_unsent_arrive_as_if_sent() -> None:
    shards = [0, 1, 1, 0, 1, 0, 0, 1, 1]
    full = _input(shards)
    constants = {SRC: "s", PUNCT: False, PTIME: None}
    sent = _by_key(pa.Table.from_batches(list(pack(iter(full.to_batches(max_chunksize=4)), [5, 6], False)),
                                         schema=PACKED))
    slim = full.drop_columns(list(constants))
    unsent = _by_key(pa.Table.from_batches(
        list(pack(iter(slim.to_batches(max_chunksize=4)), [5, 6], False, constants=constants)), schema=PACKED))
    assert sorted(sent) == sorted(unsent) == [5, 6]
    for key in sent:
        want_rows, want_sources, want_batch = received(*sent[key])
        got_rows, got_sources, got_batch = received(*unsent[key])
        assert got_rows.select(want_rows.column_names).equals(want_rows)
        assert (got_sources, got_batch) == (want_sources, want_batch)
        assert sum(map(len, unsent[key][0])) < sum(map(len, sent[key][0]))  # the point: smaller blobs


def test_a_partition_packed_slice_by_slice_reaches_each_shard_as_packed_whole() -> None:
    # shard 1's largest event time is in the first slice, shard 0's in the last: each shard must still see both
    shards = [1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 0]
    table = _input(shards)
    whole = _by_key(pa.Table.from_batches(list(pack(iter(table.to_batches(max_chunksize=3)), [5, 6], False)),
                                          schema=PACKED))
    sliced = _by_key(pa.Table.from_batches(
        list(pack(iter(table.to_batches(max_chunksize=3)), [5, 6], False, slice_rows=3)), schema=PACKED))
    assert sorted(sliced) == sorted(whole) == [5, 6]
    for key in whole:
        assert len(sliced[key][1]) == 4  # a summary from each slice (3, 3, 3 and 2 rows), on every shard
        want_rows, want_sources, want_batch = received(*whole[key])
        got_rows, got_sources, got_batch = received(*sliced[key])
        assert got_rows.equals(want_rows)
        assert (got_sources, got_batch) == (want_sources, want_batch)
        assert want_sources["s"].max_event_us == 1000 * (len(shards) - 1)


def test_operator_output_leaves_in_bounded_frames_and_whole() -> None:
    windows = pa.table({"k": list(range(10)), "n": [2 * i for i in range(10)]})
    late = pa.table({"k": [100, 101, 102]})
    stats = {"rows": 13}
    schema = pa.schema([(KIND, pa.string()), ("k", pa.int64()), ("n", pa.float64()), (STATS, pa.string())])
    out = list(frames(ShardOutput(windows=windows, retractions=None, late=late, stats=stats), schema, chunk_rows=4))
    assert [(len(f), f[KIND].iloc[0]) for f in out] == [(4, "w"), (4, "w"), (2, "w"), (3, "l"), (1, "s")]
    # Arrow-backed columns in the schema's types: PySpark hands these buffers to the JVM as they are
    assert all(list(f.columns) == schema.names for f in out)
    assert all(pa.Schema.from_pandas(f, preserve_index=False).equals(schema) for f in out)
    rows = [r for f in out for r in pa.Table.from_pandas(f, preserve_index=False).to_pylist()]
    assert sorted((r["k"], r["n"]) for r in rows if r[KIND] == "w") == [(i, 2.0 * i) for i in range(10)]
    assert sorted(r["k"] for r in rows if r[KIND] == "l") == [100, 101, 102]
    counts = [json.loads(r[STATS]) for r in rows if r[KIND] == "s"]  # one stats row per shard and batch
    assert [{k: v for k, v in c.items() if k not in (EMITTED, FULLEST)} for c in counts] == [stats]
    assert counts[0][EMITTED] == {"w": 10, "l": 3}  # what it emitted, by kind
    assert all(r[STATS] is None for r in rows if r[KIND] != "s")


def test_a_shard_without_output_still_returns_its_stats_row() -> None:
    schema = pa.schema([(KIND, pa.string()), ("k", pa.int64()), (STATS, pa.string())])
    out = list(frames(ShardOutput(windows=pa.table({"k": pa.array([], pa.int64())}), stats={"rows": 0}), schema))
    assert [len(f) for f in out] == [1] and out[0][KIND].iloc[0] == COUNTS_ROW


@given(bounds=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 2)), min_size=1, max_size=40),
       chunks=st.lists(st.integers(1, 15), min_size=1, max_size=4))
def test_a_shard_counts_a_bound_of_its_fullest_window(bounds: list[tuple[int, int]], chunks: list[int]) -> None:
    # the writer checks the group cap only when the shards' bounds add up past it (wid.pipelines.write)
    starts = [s for s, _ in bounds]
    ends = [s + d for s, d in bounds]
    table = pa.table({START: starts, END: ends, "k": list(range(len(bounds)))})
    cuts = [0, *sorted({min(c, len(bounds)) for c in chunks}), len(bounds)]
    lazy = [table.slice(lo, hi - lo) for lo, hi in zip(cuts, cuts[1:], strict=False)]
    schema = pa.schema([(KIND, pa.string()), (START, pa.int64()), (END, pa.int64()), ("k", pa.int64()),
                        (STATS, pa.string())])
    out = list(frames(ShardOutput(windows=lazy, stats={}), schema))
    counts = json.loads(out[-1][STATS].iloc[0])
    fullest = max(Counter(zip(starts, ends, strict=True)).values())  # counted apart, whole
    assert counts[EMITTED] == {"w": len(bounds)}
    assert fullest <= counts[FULLEST] <= len(bounds)
    if len(lazy) == 1:
        assert counts[FULLEST] == fullest


def test_fired_rows_of_a_join_have_no_window_to_count() -> None:
    assert fullest_window(pa.table({"k": [1, 1, 1]})) == 0


def test_a_large_table_of_several_windows_counts_as_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    # still a bound: the writer's own query then decides (wid.pipelines.write.check_cap)
    monkeypatch.setattr(output, "COUNTED_ROWS", 2)
    table = pa.table({START: [0, 0, 5], END: [5, 5, 10]})
    assert fullest_window(table) == 3
    monkeypatch.setattr(output, "COUNTED_ROWS", 3)
    assert fullest_window(table) == 2
