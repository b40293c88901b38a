"""A micro-batch's counts from the WID operator's shards (DESIGN.md section
5): each shard reports the data rows it saw, how many it rejected as bad input,
aggregated, dropped late or sent to the dead letter, what it holds, and the watermarks (the same
on every shard)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from wid.spark.stream_query import BatchTally


def tally(batch_id: int, stats: Iterable[str], rejected: int = 0, duration_ms: int = 0) -> BatchTally:
    """The `BatchTally` of one micro-batch from the shards' JSON counts
    (those of the rows rejected as bad input included), plus `rejected` rows
    counted apart (a window join's, which never reach the shards)."""
    docs = [json.loads(s) for s in stats]
    rejected += sum(d.get("rejected", 0) for d in docs)
    total = {k: sum(d[k] for d in docs) for k in ("rows", "aggregated", "late_dropped", "late_dlq",
                                                  "windows_active", "state_groups")}
    marks = [d["watermark_us"] for d in docs if d["watermark_us"] is not None]
    sources: dict[str, int | None] = {}
    for d in docs:
        sources.update({k: None if v is None else v // 1000 for k, v in d["sources"].items()})
    return BatchTally(batch_id, rejected + total["rows"], total["rows"], total["late_dropped"] + total["late_dlq"],
                      total["aggregated"], max(marks) // 1000 if marks else 0, duration_ms,
                      rows_late_dlq=total["late_dlq"], windows_active=total["windows_active"],
                      state_groups=total["state_groups"], source_watermarks_ms=tuple(sorted(sources.items())))


__all__ = ["tally"]
