"""The WID operator's output rows, as the driver reads them.

The processor writes them on the executors (`wid.kernels.operator.output`):
one schema for every kind of row, `KIND` saying which (`WINDOW_ROW`,
`RETRACTION_ROW`, `LATE_ROW`, `REJECTED_ROW`, `COUNTS_ROW`: one shard's
counts for the micro-batch, JSON in `STATS`). The operator's own plans
(`wid.spark.operator`) build and split them; anything else on the driver
(a pipeline observing the counts, `wid.pipelines.observed`) reads them
through this module only, so that executor code is named from one place
on the driver side (tests/test_layering.py holds it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.kernels.operator.output import (
    COUNTS_ROW,
    EMITTED,
    FULLEST,
    KIND,
    LATE_ROW,
    REJECTED_ROW,
    RETRACTION_ROW,
    STATS,
    WINDOW_ROW,
)
from wid.kernels.tables import REASON, ROW_JSON


def first_rejected() -> Column:
    """The first row rejected as bad input among the operator's output
    rows, as a struct of its ``reason`` and ``row_json`` (NULL when none
    was): an aggregate Column, for an observation."""
    rejected = F.struct(F.col(REASON).alias("reason"), F.col(ROW_JSON).alias("row_json"))
    return F.first(F.when(of_kind(REJECTED_ROW), rejected), ignorenulls=True)


# the shards' counts (`wid.kernels.operator.shard.run_batch`) that `counts_of` reads, as Spark SQL types
COUNTS = "rows BIGINT, rejected BIGINT, late_dropped BIGINT, late_dlq BIGINT, aggregated BIGINT, punctuations BIGINT, " \
    "watermark_us BIGINT, batch_ms BIGINT"


def counts_of(rows: DataFrame) -> DataFrame:
    """The operator's output `rows` reduced to its counts, one row per shard
    and micro-batch, in the columns of `COUNTS`: data rows (good rows:
    `aggregated` plus late), rejected rows, late rows dropped and sent to
    the dead letter, aggregated rows, punctuation rows, the global
    watermark after the micro-batch and Spark's timestamp of the
    micro-batch (epoch microseconds and milliseconds; the watermark NULL
    before there is one). Needs no analysis of `rows` (a declarative
    pipeline's query function may not ask for one)."""
    counts = F.from_json(F.col(STATS), COUNTS)
    return rows.where(of_kind(COUNTS_ROW)).select(counts.alias("c")).select("c.*")


def of_kind(kind: str) -> Column:
    """Whether an output row is of `kind` (`WINDOW_ROW`, `COUNTS_ROW`, ...):
    ``KIND = kind``, a boolean Column to filter, count or pick by."""
    return F.col(KIND) == kind


@dataclass(frozen=True)
class Held:
    """What one micro-batch of the operator's rows holds, from `held`: the
    rows of each kind (`WINDOW_ROW`, ...; a kind with none is absent) and
    an upper bound of the most window rows that share one window's bounds
    (the groups of the fullest window: the sum of each shard's fullest,
    `wid.kernels.operator.output.fullest_window`; exact when one shard
    holds all of that window's rows), with the shards' counts themselves
    (`STATS` texts, one per shard)."""

    per_kind: dict[str, int]
    fullest_at_most: int = 0
    stats: tuple[str, ...] = ()

    def of(self, *kinds: str) -> int:
        """The rows of these kinds."""
        return sum(self.per_kind.get(k, 0) for k in kinds)


def held(rows: DataFrame) -> Held:
    """`Held` of the operator's `rows` (one micro-batch), read from the
    shards' counts rows alone (each shard counts what it emitted,
    `wid.kernels.operator.output.frames`), in one Spark job with no shuffle
    that reads every partition of `rows` whole: a filter over the rows,
    never a read that stops early, so a cached `rows` is cached whole and
    an observation over them sees every row."""
    per_kind: dict[str, int] = {}
    fullest = 0
    stats = tuple(str(r[0]) for r in rows.where(of_kind(COUNTS_ROW)).select(STATS).collect())
    for text in stats:
        doc = json.loads(text)
        for kind, n in {**doc.get(EMITTED, {}), COUNTS_ROW: 1}.items():
            per_kind[kind] = per_kind.get(kind, 0) + int(n)
        fullest += int(doc.get(FULLEST, 0))
    return Held(per_kind, fullest, stats)


@dataclass(frozen=True)
class ShardCounts:
    """A micro-batch's counts, summed over its shards' `COUNTS_ROW` JSON
    (`wid.kernels.operator.shard`): data rows, rows rejected as bad input,
    aggregated, late (dropped, to the dead letter), windows (or panes) and
    (group, window) partials held; the latest shard's watermark and each
    source's watermark (epoch microseconds, None before one exists)."""

    rows: int = 0
    rejected: int = 0
    aggregated: int = 0
    late_dropped: int = 0
    late_dlq: int = 0
    windows_active: int = 0
    state_groups: int = 0
    watermark_us: int | None = None
    sources_us: dict[str, int | None] = field(default_factory=dict)


_SUMMED = ("rows", "rejected", "aggregated", "late_dropped", "late_dlq", "windows_active", "state_groups")


def shard_counts(stats: Iterable[str]) -> ShardCounts:
    """The shards' `STATS` texts of one micro-batch, summed (`ShardCounts`)."""
    docs = [json.loads(s) for s in stats]
    marks = [d["watermark_us"] for d in docs if d["watermark_us"] is not None]
    sources: dict[str, int | None] = {}
    for d in docs:
        sources.update(d["sources"])
    return ShardCounts(**{k: sum(d.get(k, 0) for d in docs) for k in _SUMMED},
                       watermark_us=max(marks) if marks else None, sources_us=sources)


__all__ = ["COUNTS", "COUNTS_ROW", "KIND", "LATE_ROW", "REJECTED_ROW", "RETRACTION_ROW", "STATS", "WINDOW_ROW",
           "Held", "ShardCounts", "counts_of", "held", "first_rejected", "of_kind", "shard_counts"]
