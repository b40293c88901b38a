"""Choosing how a batch time window's panes are made, from the data.

Two plans make panes (`wid.spark.panes`): the standard *two-phase* plan
(Spark's hash aggregate per key and pane, with partial aggregation before
its shuffle, then the vectorised merge) and the *fused* plan (rows
shuffled by key, one NumPy pass makes the panes and merges them). Which is
faster depends on how many rows a key's pane holds: partial aggregation
pays off only when it shrinks the rows (benchmarks/RESULTS.md, "Hopping
and density"; `FUSED_UP_TO` is the crossover measured there).

A plan cannot know that number, so wid measures it, as a query optimiser
with no statistics would sample: one pass over the input computing its
rows, an approximate count of its keys (Spark's ``approx_count_distinct``,
HyperLogLog++) and its first and last pane. Rows per key and pane is
then ``rows / (keys x panes spanned)``, exact for keys active throughout
and low for bursty keys (each key's rows in a few panes), for which the
fused plan is the right one anyway. The pass reads only the keys and the
event time, costs a fraction of the window query, and runs through the
DataFrame API, so it serves Spark Connect too.

``spark.wid.paneMerge`` (`wid.spark.arrow_merge.CONF`) overrides the
choice: ``fused`` or ``arrow`` (two-phase) skip the pass; ``spark`` keeps
every merge in the JVM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.spark.arrow_merge import CONF

FUSED_UP_TO = 4.0  # rows per key and pane at or below which the fused plan is faster (measured)
KEYS_RSD = 0.02  # the key count's relative standard deviation (HyperLogLog++; Spark's default is 0.05)


@dataclass(frozen=True)
class Choice:
    """Whether the fused plan makes the panes, and why, in the words
    ``wid explain`` prints."""

    fused: bool
    why: str


def density(rows: DataFrame, keys: Sequence[str], pane: Column) -> float | None:
    """Rows per key and pane of `rows` (see the module docstring), or None
    for no rows. `pane` is each row's pane index (long)."""
    key = F.struct(*keys) if len(keys) > 1 else F.col(keys[0]) if keys else F.lit(0)
    row = rows.agg(F.count(F.lit(1)), F.approx_count_distinct(key, KEYS_RSD), F.min(pane), F.max(pane)).first()
    if row is None or not row[0]:
        return None
    return float(row[0]) / (max(int(row[1]), 1) * (int(row[3]) - int(row[2]) + 1))


def choose(rows: DataFrame, keys: Sequence[str], pane: Column) -> Choice:
    """How `rows` (a batch DataFrame; `pane` each row's pane index) make
    their panes: the setting's plan when ``spark.wid.paneMerge`` names one,
    else the fused plan at or below `FUSED_UP_TO` rows per key and pane."""
    setting = rows.sparkSession.conf.get(CONF, "auto")
    if setting != "auto" or rows.isStreaming:
        fused = setting == "fused"
        return Choice(fused, f"{CONF} = {setting}" if setting != "auto" else "a stream's micro-batch")
    found = density(rows, keys, pane)
    if found is None:
        return Choice(False, "no rows")
    fused = found <= FUSED_UP_TO
    return Choice(fused, f"rows per key and pane {found:.3g} (a pass over the input), "
                         f"{'at or below' if fused else 'above'} {FUSED_UP_TO:g}: {'fused' if fused else 'two-phase'} "
                         "is faster there (measured)")


__all__ = ["FUSED_UP_TO", "Choice", "choose", "density"]
