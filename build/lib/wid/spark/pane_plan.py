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
statistics samples: the first rows of the input (a ``limit``, which reads
only what it needs, brought to the driver as Arrow), and their rows per key
and pane. A sample cuts its first and last panes short, so where the panes
strictly inside its range hold at least half its rows, the figure counts
those alone; it takes `FIRST_ROWS` rows, and `SAMPLE_ROWS` when the first
hold too few whole panes (dense input in event-time order). On input in
event-time order (log files, topics) that is the data's density; on input
in no order a sample finds each key and pane once or so, and there the
fused plan was the faster one at every density measured, 1 to 10. Moving
the rows costs most of a sample's time, so the smaller one comes first.
The sample costs one or two small Spark jobs and serves Spark Connect too;
a later query over the same input reuses its figure (`choose`). Under
`unsampled` (``wid explain --plan``, which runs no Spark job over the rows:
docs/trust.md) no sample is taken and the plan is the two-phase one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.aggregates.spark import SparkAgg
from wid.spark.arrow_merge import CONF, rows_merge

FUSED_UP_TO = 4.0  # rows per key and pane at or below which the fused plan is faster (measured)
FIRST_ROWS = 8_192  # the first sample
SAMPLE_ROWS = 65_536  # the sample when the first holds too few whole panes


@dataclass(frozen=True)
class Choice:
    """Whether the fused plan makes the panes, and why, in the words
    ``wid explain`` prints."""

    fused: bool
    why: str


@dataclass(frozen=True)
class Sample:
    """Rows per key and pane (`density`) in the input's first `rows` rows."""

    density: float
    rows: int


def _sampled(rows: DataFrame, keys: Sequence[str], pane: Column) -> DataFrame:
    """What the sample reads of each row: a hash of its key (any key type,
    8 bytes) as ``k`` and its pane as ``p``."""
    key = F.xxhash64(*[F.col(k) for k in keys]) if keys else F.lit(0).cast("long")
    return rows.select(key.alias("k"), pane.alias("p"))


def _measured(sampled: DataFrame, sample_rows: int) -> tuple[Sample | None, bool]:
    """The first `sample_rows` rows' `Sample` (None: no rows), and whether
    it stands: whole panes gave it, or it holds the whole input."""
    table = sampled.limit(sample_rows).toArrow()
    if table.num_rows == 0:
        return None, True
    lo, hi = pc.min_max(table["p"]).values()
    inner = table.filter(pc.and_(pc.greater(table["p"], lo), pc.less(table["p"], hi)))
    whole = 2 * inner.num_rows >= table.num_rows
    counted = inner if whole else table
    found = Sample(counted.num_rows / counted.group_by(["k", "p"]).aggregate([]).num_rows, table.num_rows)
    return found, whole or table.num_rows < sample_rows


def sample(rows: DataFrame, keys: Sequence[str], pane: Column, sample_rows: int | None = None) -> Sample | None:
    """Rows per key and pane among the first rows of `rows`, or None for no
    rows (module docstring): `FIRST_ROWS`, then `SAMPLE_ROWS` unless the
    first stand; `sample_rows` takes that many alone. `pane` is each row's
    pane index (long)."""
    sampled = _sampled(rows, keys, pane)
    for n in (sample_rows,) if sample_rows else (FIRST_ROWS, SAMPLE_ROWS):
        found, stands = _measured(sampled, n)
        if stands:
            break
    return found


def density(rows: DataFrame, keys: Sequence[str], pane: Column, sample_rows: int | None = None) -> float | None:
    """`sample`'s rows per key and pane."""
    found = sample(rows, keys, pane, sample_rows)
    return None if found is None else found.density


SEEN_MAX = 256  # inputs whose density this process remembers (`choose`)
_seen: dict[int, Sample | None] = {}


def forget() -> None:
    """Forget every density sampled so far: the next query over any input
    samples it again (benchmarks time a query's first run with it)."""
    _seen.clear()


_UNSAMPLED: ContextVar[bool] = ContextVar("wid_pane_plan_unsampled", default=False)


@contextmanager
def unsampled() -> Iterator[None]:
    """Within the block, `choose` samples nothing, so that compiling a plan
    runs no Spark job over the rows: where it would sample, it takes the
    two-phase plan and says that the stage chooses when it runs
    (``wid explain --plan``)."""
    token = _UNSAMPLED.set(True)
    try:
        yield
    finally:
        _UNSAMPLED.reset(token)


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
    plan; both give the same windows. Under `unsampled`, where a sample
    would be taken, the two-phase plan without one."""
    setting = rows.sparkSession.conf.get(CONF, "auto")
    if setting != "auto" or rows.isStreaming:
        fused = setting == "fused"
        return Choice(fused, f"{CONF} = {setting}" if setting != "auto" else "a stream's micro-batch")
    if not rows_merge(aggs):
        return Choice(False, "an aggregation has no NumPy merge over rows (an HLL sketch): no sample taken")
    if _UNSAMPLED.get():
        return Choice(False, f"no sample taken (explain runs no Spark job over the rows): {outline_notes('auto')[0]}; "
                             "the plan shown is the two-phase one")
    seen = _sampled(rows, keys, pane).semanticHash()
    reused = seen in _seen
    found = _seen[seen] if reused else sample(rows, keys, pane)
    if not reused:
        if len(_seen) >= SEEN_MAX:
            del _seen[next(iter(_seen))]
        _seen[seen] = found
    if found is None:
        return Choice(False, "no rows")
    fused = found.density <= FUSED_UP_TO
    where = "by an earlier query over the same input" if reused else "now"
    return Choice(fused, f"rows per key and pane {found.density:.3g} (in the first {found.rows:,} rows, sampled "
                         f"{where}), {'at or below' if fused else 'above'} {FUSED_UP_TO:g}: "
                         f"{'fused' if fused else 'two-phase'} is faster there (measured)")


def outline_notes(setting: str) -> tuple[str, ...]:
    """What `wid explain` says of the choice before any data is read, under
    ``spark.wid.paneMerge`` = `setting`."""
    if setting != "auto":
        return ()
    return (f"the fused or the two-phase merge is chosen when it runs, from the rows per key and pane in the "
            f"input's first {FIRST_ROWS:,} or {SAMPLE_ROWS:,} rows (fused at or below {FUSED_UP_TO:g})",)


__all__ = ["FIRST_ROWS", "FUSED_UP_TO", "SAMPLE_ROWS", "SEEN_MAX", "Choice", "Sample", "choose", "density", "forget",
           "outline_notes", "sample", "unsampled"]
