"""The host-local state cache (`wid.kernels.operator.state_cache`): reads
come from the file of the state store's token, and from the state store
whenever that file does not describe the committed state."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.operator.cases import SCHEMA, assert_same_results
from tests.kernels.operator.cases import specs as time_specs
from tests.kernels.operator.cases import streams as time_streams
from tests.kernels.operator.harness import LocalOperator
from tests.kernels.operator.test_extent_engines import SCHEMA as EXTENT_SCHEMA
from tests.kernels.operator.test_extent_engines import assert_same_results as assert_extents_same
from tests.kernels.operator.test_extent_engines import full, is_punctuation
from tests.kernels.operator.test_extent_engines import specs as extent_specs
from tests.kernels.operator.test_extent_engines import streams as extent_streams
from wid.kernels.operator.shard import MemoryStore
from wid.kernels.operator.state_cache import TOKEN, CachedStore, uncached
from wid.semantics.stream_oracle import BatchResult, MicroBatch, run_stream
from wid.spec.window import Window


class Counting(MemoryStore):
    """A `MemoryStore` that records the names its reads were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def get(self, name: str) -> bytes | None:
        self.asked.append(name)
        return super().get(name)

    def get_pane(self, pane: int) -> bytes | None:
        self.asked.append(f"pane {pane}")
        return super().get_pane(pane)


def batch(store: Counting, host: Path, writes: dict[str, bytes | None], panes: dict[int, bytes | None]) -> None:
    """One micro-batch through the cache: reads `writes`' names, then writes them (None: deletes)."""
    cached = CachedStore(store, host)
    for name, blob in writes.items():
        cached.get(name)
        cached.put(name, blob) if blob is not None else cached.delete(name)
    for pane, blob in panes.items():
        cached.get_pane(pane)
        cached.put_pane(pane, blob) if blob is not None else cached.delete_pane(pane)
    cached.finish()


def test_the_next_micro_batch_reads_the_file_not_the_store(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path, {"a": b"1", "b": b"2"}, {7: b"p7"})
    batch(store, tmp_path, {"b": None}, {})
    store.asked.clear()
    cached = CachedStore(store, tmp_path)
    assert (cached.get("a"), cached.get("b"), cached.get_pane(7)) == (b"1", None, b"p7")
    assert store.asked == [TOKEN]  # the token only
    assert cached.get("never") is None and store.asked == [TOKEN, "never"]  # unlisted names ask the store
    names = [f.name for f in tmp_path.iterdir()]  # the manifest and a file per value held (a, pane 7): no pile-up
    assert len(names) == 3 and sum(n.endswith(".blob") for n in names) == 2, names


def test_a_micro_batch_writes_files_for_what_it_changed_alone(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path, {f"v{i}": bytes([i]) * 1000 for i in range(50)}, {})
    before = {f.name: f.stat().st_mtime_ns for f in tmp_path.iterdir() if f.name.endswith(".blob")}
    batch(store, tmp_path, {"v3": b"changed"}, {})
    after = {f.name for f in tmp_path.iterdir() if f.name.endswith(".blob")}
    assert len(after) == 50 and len(after - set(before)) == 1  # one new file; the 49 others untouched
    store.asked.clear()
    cached = CachedStore(store, tmp_path)
    assert [cached.get(f"v{i}") for i in (2, 3)] == [bytes([2]) * 1000, b"changed"] and store.asked == [TOKEN]


def test_another_hosts_micro_batch_makes_the_file_stale(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path / "a", {"x": b"old"}, {})
    batch(store, tmp_path / "b", {"x": b"new"}, {})  # the shard moved: host a's file stays behind
    store.asked.clear()
    assert CachedStore(store, tmp_path / "a").get("x") == b"new"
    assert store.asked == [TOKEN, "x"]


def test_a_rolled_back_attempt_leaves_no_file_to_trust(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path, {"x": b"committed"}, {})
    kept = copy.deepcopy(store.__dict__)
    batch(store, tmp_path, {"x": b"never committed"}, {})
    store.__dict__.update(kept)  # the task failed before its commit
    store.asked.clear()
    assert CachedStore(store, tmp_path).get("x") == b"committed"
    assert store.asked == [TOKEN, "x"]


def test_a_micro_batch_without_the_copy_makes_the_file_stale(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path, {"x": b"old"}, {})
    uncached(store).put("x", b"new")  # the query restarted with spark.wid.operator.stateCache = false
    assert CachedStore(store, tmp_path).get("x") == b"new"


def test_an_unwritable_cache_still_changes_the_token(tmp_path: Path) -> None:
    store = Counting()
    batch(store, tmp_path, {"x": b"1"}, {})
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    batch(store, blocked, {"x": b"2"}, {})  # cannot write its file
    assert CachedStore(store, tmp_path).get("x") == b"2"


def run_with_cache(window: Window, schema: pa.Schema, batches: list[MicroBatch], shards: int, seed: int,
                   is_punctuation: Callable[[Any], bool] = lambda _: False) -> list[BatchResult]:
    """`LocalOperator` over two hosts' caches, with rolled-back attempts."""
    with tempfile.TemporaryDirectory() as tmp:
        hosts = [Path(tmp) / "a", Path(tmp) / "b"]
        return LocalOperator(window, schema, shards, is_punctuation, hosts=hosts, seed=seed).run(batches)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=time_specs(), batches=time_streams(), shards=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_time_and_session_shards_through_the_cache_equal_the_oracle(window: Window, batches: list[MicroBatch],
                                                                   shards: int, seed: int) -> None:
    assert_same_results(window, run_with_cache(window, SCHEMA, batches, shards, seed), run_stream(batches, window))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(window=extent_specs(), batches=extent_streams(), shards=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_count_rolling_and_landmark_shards_through_the_cache_equal_the_oracle(
        window: Window, batches: list[MicroBatch], shards: int, seed: int) -> None:
    batches = full(batches)
    got = run_with_cache(window, EXTENT_SCHEMA, batches, shards, seed, is_punctuation)
    assert_extents_same(window, got, run_stream(batches, window, is_punctuation))


def test_a_shard_call_with_the_copy_off_then_on_again_reads_the_changed_state(tmp_path: Path,
                                                                              monkeypatch: Any) -> None:
    """On, off, on in one application (the cache directory survives a query
    restart): the third micro-batch must see the second's sum, not the file
    the first left."""
    import pandas as pd

    from tests.kernels.operator.harness import LocalOperator
    from wid import Aggregation
    from wid.kernels.fields import END, FINAL, START
    from wid.kernels.operator import shard_call
    from wid.kernels.operator.output import KIND, STATS
    from wid.kernels.operator.packing import pack
    from wid.semantics.stream_oracle import BatchResult

    window = Window(kind="tumbling", duration_ms=10, event_time_column="ts", event_time_unit="ms", group_by=["k"],
                    aggregations=[Aggregation("sum", "v", as_="s")])
    local = LocalOperator(window, SCHEMA, shards=1)
    output = pa.schema([(KIND, pa.string()), (START, pa.int64()), (END, pa.int64()), (FINAL, pa.bool_()),
                        ("k", pa.string()), ("s", pa.float64()), (STATS, pa.string())])
    monkeypatch.setattr(shard_call, "cache_root", lambda _, __: tmp_path)
    store = MemoryStore()
    sums = []
    for i, (ts, cache) in enumerate([(1, True), (2, False), (25, True)]):
        rows = local._table(MicroBatch([("a", {"k": "a", "ts": ts, "v": float(ts), "w": 0})], i), BatchResult())
        packed = [b.to_pandas() for b in pack(iter(rows.to_batches()), keys=[0], scoped=False)]
        call = shard_call.ShardCall(local.spec).emitting(output, "plan" if cache else None)
        out = pd.concat(list(call.handle(store, iter(packed))))
        sums += list(out.loc[out[KIND] == "w", "s"])
    assert sums == [3.0]


def test_drop_removes_the_plan_directories_on_this_host_and_nothing_else(tmp_path: Path) -> None:
    from wid.kernels.operator.state_cache import CACHE_DIR, cache_root, drop

    mine, other = cache_root(str(tmp_path), "plan-a"), cache_root(str(tmp_path), "plan-b")
    assert mine is not None and other is not None
    for d in (mine, other):
        d.mkdir(parents=True)
        (d / "token").write_bytes(b"x")
    elsewhere = tmp_path / "not-a-cache" / "plan-a"  # not under wid-state-cache: never touched
    elsewhere.mkdir(parents=True)
    absent = str(tmp_path / "other-host" / CACHE_DIR / "plan-a")
    assert drop([str(mine), str(elsewhere), absent]) == [str(mine)]
    assert not mine.exists() and (other / "token").exists() and elsewhere.exists()
