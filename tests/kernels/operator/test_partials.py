"""The partials store (`wid.kernels.operator.partials`), which every engine
of the WID operator keeps its state in: an entry is its base and
increments merged; compaction bounds what a read merges; a micro-batch of
a count, rolling or landmark window writes what it changed, not the state
held; and state a layout-2 operator wrote (those kinds' tables whole)
restarts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tests.kernels.operator import layout2
from tests.kernels.operator.harness import LocalOperator
from tests.kernels.operator.test_extent_engines import assert_same_results
from tests.kernels.operator.test_increments import Recording
from wid import Aggregation, Window
from wid.kernels.operator import partials
from wid.kernels.operator.partials import Partials
from wid.kernels.operator.shard import LAYOUT, MemoryStore
from wid.semantics.stream_oracle import MicroBatch, run_stream

FIXTURE = Path(__file__).parent / "fixtures" / "layout2.json"


def _summed(key: object, table: pa.Table) -> pa.Table:
    """The test's merge: a sum per key."""
    return table.group_by("g").aggregate([("v", "sum")]).rename_columns(["g", "v"]).sort_by("g")


@pytest.mark.parametrize("ratio", [1, 4])
def test_an_entry_reads_as_its_base_and_increments_merged(ratio: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partials, "RATIO", ratio)
    rng = random.Random(ratio)
    store, want = MemoryStore(), {}
    for _ in range(30):  # one micro-batch each: a store over the same state, its additions, its flush
        entry = Partials(store, "index", "base_", _summed, keys=("e",))
        part = {rng.randrange(12): rng.randrange(1, 9) for _ in range(rng.randrange(1, 4))}
        entry.add("e", pa.table({"g": list(part), "v": list(part.values())}))
        entry.flush()
        for g, v in part.items():
            want[g] = want.get(g, 0) + v
        got = Partials(store, "index", "base_", _summed).read("e")
        assert got is not None and dict(zip(got["g"].to_pylist(), got["v"].to_pylist(), strict=True)) == want
    index = json.loads(store.values["index"])["e"]
    increments = sum(i[1] for i in index[1])
    assert increments < ratio * index[0]  # compaction keeps a read to (1 + RATIO) times the entry's rows


def test_replacing_and_dropping_delete_what_they_replace() -> None:
    store = MemoryStore()
    entry = Partials(store, "index", "", _summed, numbered=True)
    for v in (1, 2, 3):
        entry.add(7, pa.table({"g": [0], "v": [v]}))
        entry.flush()
    entry.replace(7, pa.table({"g": [0], "v": [100]}))
    entry.flush()
    assert [k for k in store.values if k.startswith("7.")] == [] and set(store.panes) == {7}
    again = Partials(store, "index", "", _summed, numbered=True)
    assert again.read(7).to_pydict() == {"g": [0], "v": [100]}  # type: ignore[union-attr]
    again.drop(7)
    again.flush()
    assert store.panes == {} and json.loads(store.values["index"]) == {}


AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "w", as_="hi"))
QUIET: dict[str, dict[str, Any]] = {  # windows that stay open over the test's micro-batches, holding every key
    "count": {"size_rows": 1000, "partition_by": ("k",)},
    "rolling": {"duration_ms": 10_000_000, "group_by": ("k",)},
    "landmark": {"hop_ms": 100_000_000, "landmark_ms": 0, "group_by": ("k",)},
}


def _rows(keys: range, t_ms: int, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    return [("a", {"k": f"key{k:05d}", "ts": t_ms + rng.randrange(100), "v": float(k % 7), "w": k % 5})
            for k in keys]


@pytest.mark.parametrize("kind", list(QUIET))
def test_a_micro_batch_writes_the_groups_it_touched_not_the_state(kind: str) -> None:
    rng = random.Random(1)
    w = Window(kind=kind, event_time_column="ts", event_time_unit="ms", aggregations=AGGS, lateness_ms=0,
               max_groups_per_window=100_000, **QUIET[kind])
    local = LocalOperator(w, layout2.schema(), shards=1)
    store = local.stores[0] = Recording()
    local.run([MicroBatch(_rows(range(5_000), 1_000, rng), 1)])
    opened = store.written
    written = []
    for i in range(2, 8):  # a few rows of a few keys, in the windows still open
        store.written = 0
        local.run([MicroBatch(_rows(range(i * 10, i * 10 + 10), 1_000 + i * 200, rng), i)])
        written.append(store.written)
    assert max(written) < opened / 20, (opened, written)


@pytest.mark.parametrize("name", list(layout2.WINDOWS))
def test_state_written_by_layout_2_restarts(name: str) -> None:
    """Shards' state as the layout-2 operator wrote it after the first
    micro-batches (`layout2`'s fixture) runs on with this layout and gives
    the streaming oracle's answer for the micro-batches after."""
    window, stream = layout2.window(name), layout2.stream()
    stores = [layout2.decode(doc) for doc in json.loads(FIXTURE.read_text())[name]]
    assert all(json.loads(s.values["meta"])["layout"] == 2 for s in stores)
    local = LocalOperator(window, layout2.schema(), layout2.SHARDS)
    local.stores = stores
    got = local.run(stream[layout2.CUT:])
    assert_same_results(window, got, run_stream(stream, window)[layout2.CUT:])
    assert all(json.loads(s.values["meta"])["layout"] == LAYOUT == 3 for s in stores)


def test_the_fixture_is_the_state_of_its_windows() -> None:
    doc = json.loads(FIXTURE.read_text())
    assert set(doc) == set(layout2.WINDOWS) and all(len(shards) == layout2.SHARDS for shards in doc.values())
    tables = [pc.sum(pa.array([len(v) for v in s["values"].values()])).as_py() for shards in doc.values() for s in shards]
    assert min(tables) > 0
