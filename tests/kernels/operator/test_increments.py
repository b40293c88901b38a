"""State that grows with the rows that change (`wid.kernels.operator.partials`):
a micro-batch writes the partials of the groups it touched, not the
pane or the shard's sessions; increments and their compaction give the
streaming oracle's windows; a checkpoint written before increments
restarts."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.kernels.operator.cases import SCHEMA, assert_same_results
from tests.kernels.operator.harness import LocalOperator
from wid import Aggregation, Window
from wid.kernels.operator import partials as increments
from wid.kernels.operator.shard import MemoryStore
from wid.semantics.stream_oracle import MicroBatch, run_stream

AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("max", "w", as_="hi"))
SHAPES = {"tumbling": {"duration_ms": 10_000}, "hopping": {"duration_ms": 10_000, "hop_ms": 2_500},
          "session": {"gap_ms": 10_000}}


def window(kind: str, **extra: Any) -> Window:
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=AGGS,
                  max_groups_per_window=100_000, **SHAPES[kind], **extra)


class Recording(MemoryStore):
    """A `MemoryStore` that counts the bytes put into it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def put(self, name: str, blob: bytes) -> None:
        self.written += len(blob)
        super().put(name, blob)

    def put_pane(self, pane: int, blob: bytes) -> None:
        self.written += len(blob)
        super().put_pane(pane, blob)


def rows(keys: range, t_ms: int, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    return [("a", {"k": f"key{k:05d}", "ts": t_ms + rng.randrange(100), "v": float(k % 7), "w": k % 5})
            for k in keys]


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
def test_a_micro_batch_writes_the_groups_it_touched_not_the_state(kind: str) -> None:
    rng = random.Random(1)
    local = LocalOperator(window(kind), SCHEMA, shards=1)
    store = local.stores[0] = Recording()
    local.run([MicroBatch(rows(range(5_000), 1_000, rng), 1)])
    opened = store.written
    written = []
    for i in range(2, 6):  # a few rows of a few keys, in the windows (and sessions) still open
        store.written = 0
        local.run([MicroBatch(rows(range(i * 10, i * 10 + 10), 1_000 + i * 50, rng), i)])
        written.append(store.written)
    assert max(written) < opened / 20, (opened, written)


def batches(rng: random.Random, n: int, keys: int) -> list[MicroBatch]:
    """`n` micro-batches of random keys with event time moving 400 ms a
    batch and some disorder, so that windows stay open over many batches,
    then close."""
    out = []
    for i in range(n):
        batch = [("a", {"k": f"key{rng.randrange(keys)}", "ts": i * 400 + rng.randrange(-300, 300),
                        "v": rng.choice([None, float(rng.randrange(-9, 9))]), "w": rng.randrange(5)})
                 for _ in range(rng.randrange(5, 40))]
        out.append(MicroBatch(batch, i))
    return out


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
@pytest.mark.parametrize(("ratio", "most"), [(1, 3), (4, 1024)])
def test_increments_and_compactions_give_the_oracle_s_windows(kind: str, ratio: int, most: int, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(increments, "RATIO", ratio)
    monkeypatch.setattr(increments, "MAX_INCREMENTS", most)
    for seed in range(3):
        w = window(kind, lateness_ms=300, late_data="dlq")
        stream = batches(random.Random(seed), 60, 120)
        local = LocalOperator(w, SCHEMA, shards=2, hosts=[tmp_path / f"{seed}a", tmp_path / f"{seed}b"], seed=seed)
        assert_same_results(w, local.run(stream), run_stream(stream, w))


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
def test_state_written_before_increments_restarts(kind: str) -> None:
    """A shard's state as the layout before increments wrote it (a pane
    index of row counts; the sessions' table with no index) reads as a base
    without increments."""
    w = window(kind, lateness_ms=300)
    stream = batches(random.Random(9), 40, 60)
    local = LocalOperator(w, SCHEMA, shards=1)
    got = local.run(stream[:1])
    store = local.stores[0]
    if kind == "session":
        store.values.pop("sessions_index")
    else:
        index = json.loads(store.values["panes"])
        store.values["panes"] = json.dumps({p: e[0] for p, e in index.items()}).encode()
    got += local.run(stream[1:])
    assert_same_results(w, got, run_stream(stream, w))


def test_an_entry_reads_the_layout_before_increments() -> None:
    assert increments.Entry.loads(12) == increments.Entry(rows=12)
    entry = increments.Entry(rows=10)
    assert [entry.compacts(n) for n in (0, 39, 40)] == [False, False, True]
    seq = entry.add_increment(30, 7)
    assert (seq, entry.held, entry.least_ends()) == (0, 40, [7])
    assert increments.Entry.loads(json.loads(json.dumps(entry.dumps()))) == entry
    assert increments.Entry().compacts(1)  # no base yet: the first rows are the base


def test_a_checkpoint_in_a_newer_layout_is_refused_in_one_line() -> None:
    from wid.kernels.operator.shard import LAYOUT, load_meta
    from wid.spark.errors import translate

    store = MemoryStore()
    store.put("meta", json.dumps({"global": None, "sources": {}, "shards": 2, "layout": LAYOUT + 1}).encode())
    with pytest.raises(RuntimeError) as err:
        load_meta(store, 2)
    assert f"layout {LAYOUT + 1}" in str(err.value) and "start from a new checkpoint" in str(err.value)
    wrapped = RuntimeError(f"[FOREACH_BATCH_USER_FUNCTION_ERROR] ... RuntimeError: {err.value} SQLSTATE: 39000")
    found = translate(wrapped)
    assert found is not None and found.field == "stream.checkpoint" and "SQLSTATE" not in str(found)
