"""Shard state as layout 2 of the WID operator wrote it (before the partials
store kept count, rolling and landmark state in increments), for the test
that such a checkpoint restarts (`test_partials`).

The fixture `fixtures/layout2.json` holds, for each window below, the
stores of its shards after the first `CUT` micro-batches of `stream()`, as
the operator of commit 0b3dbc1 (layout 2) wrote them. Made with that
commit's code, not this one's:

    git archive 0b3dbc1 | tar -x -C /tmp/wid-l2
    cp tests/kernels/operator/layout2.py /tmp/wid-l2/tests/kernels/operator/
    (cd /tmp/wid-l2 && python -m tests.kernels.operator.layout2 > fixture.json)
"""

from __future__ import annotations

import base64
import json
import random
import sys
from typing import Any

SHARDS = 1  # one shard: the harness hashes keys to shards with Python's hash, which changes between processes
CUT = 6  # micro-batches run by the old layout; the rest by the new
AGGS = (("count", None, "n"), ("sum", "v", "s"), ("max", "w", "hi"))
WINDOWS: dict[str, dict[str, Any]] = {
    "count": {"kind": "count", "size_rows": 4, "hop_rows": 2, "partition_by": ("k",)},
    "count_arrival": {"kind": "count", "size_rows": 3, "hop_rows": 3, "rank_by": "arrival", "group_by": ("k",)},
    "rolling": {"kind": "rolling", "duration_ms": 25, "group_by": ("k",)},
    "rolling_every": {"kind": "rolling", "duration_ms": 25, "every_rows": 2, "group_by": ("k",)},
    "landmark": {"kind": "landmark", "hop_ms": 10, "landmark_ms": -40, "group_by": ("k",)},
    "cumulate_reopen": {"kind": "landmark", "hop_ms": 10, "landmark_ms": -40, "max_duration_ms": 30,
                        "group_by": ("k",), "late_data": "reopen", "allowed_lateness_ms": 15},
    "tumbling": {"kind": "tumbling", "duration_ms": 20, "group_by": ("k",)},
    "session_update": {"kind": "session", "gap_ms": 6, "group_by": ("k",), "emit": "on_update"},
}


def window(name: str) -> Any:
    from wid import Aggregation, Window

    aggs = tuple(Aggregation(a, c, as_=alias) for a, c, alias in AGGS)
    return Window(event_time_column="ts", event_time_unit="ms", lateness_ms=8, max_groups_per_window=1000,
                  aggregations=aggs, **WINDOWS[name])


def stream(seed: int = 11) -> list[Any]:
    """Twelve micro-batches of rows of keys a-d, event time moving 6 ms a batch, some disorder."""
    from wid.semantics.stream_oracle import MicroBatch

    rng = random.Random(seed)
    out = []
    for i in range(12):
        rows = [{"k": rng.choice("abcd"), "ts": i * 6 + rng.randrange(-9, 4), "v": float(rng.randrange(-5, 9)),
                 "w": rng.randrange(9)} for _ in range(rng.randrange(3, 9))]
        out.append(MicroBatch([("a", r) for r in rows], i * 10))
    return out


def schema() -> Any:
    import pyarrow as pa

    return pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.float64()), ("w", pa.int64())])


def encode(store: Any) -> dict[str, Any]:
    return {"values": {k: base64.b64encode(v).decode() for k, v in store.values.items()},
            "panes": {str(k): base64.b64encode(v).decode() for k, v in store.panes.items()}}


def decode(doc: dict[str, Any]) -> Any:
    from wid.kernels.operator.shard import MemoryStore

    store = MemoryStore()
    store.values = {k: base64.b64decode(v) for k, v in doc["values"].items()}
    store.panes = {int(k): base64.b64decode(v) for k, v in doc["panes"].items()}
    return store


def main() -> int:
    from tests.kernels.operator.harness import LocalOperator

    out = {}
    for name in WINDOWS:
        operator = LocalOperator(window(name), schema(), SHARDS)
        operator.run(stream()[:CUT])
        out[name] = [encode(s) for s in operator.stores]
    json.dump(out, sys.stdout, indent=0, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
