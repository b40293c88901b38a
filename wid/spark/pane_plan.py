"""Choosing how a batch time window's panes are made, from the data.

Two plans make panes (`wid.spark.panes`): the standard *two-phase* plan
(Spark's hash aggregate per key and pane, with partial aggregation before
its shuffle, then the vectorised merge) and the *fused* plan (rows
shuffled by key, one NumPy pass makes the panes and merges them). Which is
faster depends on how many rows a key's pane holds: partial aggregation
pays off only when it shrinks the rows (benchmarks/RESULTS.md, "density";
`FUSED_UP_TO` lies between the figures measured there and in HISTORY.md).

What decides is how much partial aggregation shrinks the rows a task
holds, so that is what wid measures, as a query optimiser with no
statistics samples: the first `SAMPLE_ROWS` rows of the input (a
``limit``, which reads only what it needs, brought to the driver as
Arrow), and their rows per key and pane. On input in event-time order (log
files, topics) that is the data's density; on input in no order a sample
finds each key and pane once or so, and there the fused plan was the
faster one at every density measured, 1 to 10. The sample costs one small
Spark job and serves Spark Connect too; a later query over the same input
reuses its figure (`choose`).

``spark.wid.paneMerge`` (`wid.spark.arrow_merge.CONF`) overrides the
choice: ``fused`` or ``arrow`` (two-phase) skip the sample; ``spark`` keeps
every merge in the JVM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.aggregates.spark import SparkAgg
from wid.spark.arrow_merge import CONF, rows_merge

FUSED_UP_TO = 4.0  # rows per key and pane at or below which the fused plan is faster (measured)
SAMPLE_ROWS = 65_536


@dataclass(frozen=True)
class Choice:
    """Whether the fused plan makes the panes, and why, in the words
    ``wid explain`` prints."""

    fused: bool
    why: str


def _sampled(rows: DataFrame, keys: Sequence[str], pane: Column) -> DataFrame:
    """What the sample reads of each row: a hash of its key (any key type,
    8 bytes) and its pane."""
    key = F.xxhash64(*[F.col(k) for k in keys]) if keys else F.lit(0).cast("long")
    return rows.select(key.alias("k"), pane.alias("p"))


def _measured(sampled: DataFrame, sample_rows: int) -> float | None:
    table = sampled.limit(sample_rows).toArrow()
    if table.num_rows == 0:
        return None
    return float(table.num_rows / table.group_by(["k", "p"]).aggregate([]).num_rows)


def density(rows: DataFrame, keys: Sequence[str], pane: Column, sample_rows: int | None = None) -> float | None:
    """Rows per key and pane among the first `sample_rows` rows of `rows`
    (default `SAMPLE_ROWS`; see the module docstring), or None for no rows.
    `pane` is each row's pane index (long)."""
    return _measured(_sampled(rows, keys, pane), sample_rows or SAMPLE_ROWS)


SEEN_MAX = 256  # inputs whose density this process remembers (`choose`)
_seen: dict[int, float | None] = {}


def forget() -> None:
    """Forget every density sampled so far: the next query over any input
    samples it again (benchmarks time a query's first run with it)."""
    _seen.clear()


def choose(rows: DataFrame, keys: Sequence[str], pane: Column, aggs: Sequence[SparkAgg] = ()) -> Choice:
    """How `rows` (a batch DataFrame; `pane` each row's pane index) make
    the panes of `aggs`: the setting's plan when ``spark.wid.paneMerge``
    names one; two-phase when an aggregation has no NumPy merge over rows;
    else the fused plan at or below `FUSED_UP_TO` rows per key and pane.

    The density of an input sampled before (the same analysed plan, by
    Spark's semantic hash) is reused, as a query optimiser keeps the
    statistics it gathered: a query repeated over the same input, such as
    a cached DataFrame, pays for one sample. If the data under the same
    plan changed (files rewritten in place), the choice may be the slower
    plan; both give the same windows."""
    setting = rows.sparkSession.conf.get(CONF, "auto")
    if setting != "auto" or rows.isStreaming:
        fused = setting == "fused"
        return Choice(fused, f"{CONF} = {setting}" if setting != "auto" else "a stream's micro-batch")
    if not rows_merge(aggs):
        return Choice(False, "an aggregation has no NumPy merge over rows (an HLL sketch): no sample taken")
    sampled = _sampled(rows, keys, pane)
    seen = sampled.semanticHash()
    reused = seen in _seen
    found = _seen[seen] if reused else _measured(sampled, SAMPLE_ROWS)
    if not reused:
        if len(_seen) >= SEEN_MAX:
            del _seen[next(iter(_seen))]
        _seen[seen] = found
    if found is None:
        return Choice(False, "no rows")
    fused = found <= FUSED_UP_TO
    where = "by an earlier query over the same input" if reused else "now"
    return Choice(fused, f"rows per key and pane {found:.3g} (in the first {SAMPLE_ROWS:,} rows, sampled {where}), "
                         f"{'at or below' if fused else 'above'} {FUSED_UP_TO:g}: {'fused' if fused else 'two-phase'} "
                         "is faster there (measured)")


def outline_notes(setting: str) -> tuple[str, ...]:
    """What `wid explain` says of the choice before any data is read, under
    ``spark.wid.paneMerge`` = `setting`."""
    if setting != "auto":
        return ()
    return (f"the fused or the two-phase merge is chosen when it runs, from the rows per key and pane in the "
            f"input's first {SAMPLE_ROWS:,} rows (fused at or below {FUSED_UP_TO:g})",)


__all__ = ["FUSED_UP_TO", "SAMPLE_ROWS", "SEEN_MAX", "Choice", "choose", "density", "forget", "outline_notes"]
