"""A stream's history, kept beside its checkpoint: one line per
micro-batch with its accounting, watermarks and duration
(``<checkpoint>/wid-history.jsonl``, `FILE`), written by `wid run` as each
micro-batch ends and read by ``wid status`` (its table, its ``--plot``).

Spark's checkpoint keeps what a query needs to resume (offsets, commits,
state), not what a micro-batch counted; wid's counts reach the driver with
each micro-batch's progress (`wid.pipelines.observed`) and are written here,
on the driver (the Spark Connect client), for a checkpoint on its local
disk. A replayed micro-batch (after a crash) writes its line again; the
last line of a batch id is its count (`read`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from wid.pipelines.checkpoint import local_directory
from wid.pipelines.report import BatchTally

FILE = "wid-history.jsonl"


@dataclass(frozen=True)
class Entry:
    """One micro-batch of the history: its id, when it ended (epoch ms),
    its counts, the global and per-source watermarks (epoch ms) and how
    long it took."""

    batch_id: int
    ended_ms: int
    rows_in: int
    rows_rejected: int
    rows_late_dropped: int
    rows_late_dlq: int
    rows_aggregated: int
    watermark_ms: int
    duration_ms: int
    source_watermarks_ms: dict[str, int | None]

    @classmethod
    def of(cls, tally: BatchTally, ended_ms: int) -> Entry:
        """The entry of micro-batch `tally`, ended at `ended_ms`."""
        return cls(tally.batch_id, ended_ms, tally.rows_in, tally.rows_rejected, tally.rows_late_dropped,
                   tally.rows_late_dlq, tally.rows_aggregated, tally.watermark_ms, tally.duration_ms,
                   dict(tally.source_watermarks_ms))


def append(checkpoint: str, tally: BatchTally) -> None:
    """Add micro-batch `tally` to the history of local `checkpoint` (a URI
    of another file system: nothing is kept)."""
    root = local_directory(checkpoint)
    if root is None:
        return
    root.mkdir(parents=True, exist_ok=True)
    line = json.dumps(Entry.of(tally, time.time_ns() // 1_000_000).__dict__, sort_keys=True)
    with (root / FILE).open("a", encoding="utf-8") as out:
        out.write(line + "\n")


def read(checkpoint: str) -> list[Entry]:
    """The history of local `checkpoint`, one entry per micro-batch id (its
    last line), in batch order; empty when none was kept. A line cut short
    by a kill is skipped."""
    root = local_directory(checkpoint)
    path = None if root is None else root / FILE
    if path is None or not path.is_file():
        return []
    found: dict[int, Entry] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            doc: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            continue
        found[doc["batch_id"]] = Entry(**doc)
    return [found[b] for b in sorted(found)]


__all__ = ["FILE", "Entry", "append", "read"]
