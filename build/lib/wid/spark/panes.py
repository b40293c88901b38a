"""Merging panes into windows in O(n): the pane stage of docs/architecture.md#execution-paths.

A *pane* is a tumbling partial aggregate. A window that is the union of
`length` consecutive panes, starting every `hop` panes, is computed without
copying panes into windows, by van Herk and Gil-Werman's block decomposition:

- cut the pane axis into blocks of `length` panes; any window spans at most
  two consecutive blocks, block b and b+1;
- per block, a running *prefix* merge (ascending) and a running *suffix*
  merge (descending): window ``[s, e]`` = suffix of block b from s, merged
  with prefix of block b+1 up to e;
- each pane row q contributes its suffix merge to the windows whose start
  falls after the previous non-empty pane of its block, up to q, and its
  prefix merge to the windows whose end falls from q up to before the next
  non-empty pane (windows that start in the previous block only);
- a ``groupBy(keys, window)`` merges the at most two contributions.

Every non-empty window gets exactly one suffix and/or one prefix
contribution, so sums are never double counted, and the number of rows after
the explode is at most twice the number of output windows. Sorting, running
frames and the final aggregate are all O(panes); nothing grows with
``length / hop``. With the input partitioned by the keys, no stage after the
pane aggregate shuffles.

Landmark (cumulative) windows are prefixes of their period and need only the
prefix pass (`cumulative`).

This Spark form runs when a field has no NumPy merge (HLL sketches) or the
session asks for it (``spark.wid.paneMerge = spark``). Otherwise `sliding`
and `cumulative`, given pane partials, run the vectorised merge
(`wid.spark.arrow_merge.vectorised`), and `sliding_rows` hands rows to one
fused NumPy pass per partition (`wid.spark.arrow_merge.fused`).

Which one gets the rows: time windows (`sliding_panes`, `cumulative_panes`)
let Spark aggregate the panes first: its partial aggregation runs before the
shuffle and shrinks the rows by the rows per pane, as two-phase aggregation
does in Spark, Flink and DuckDB. Count windows (`sliding_rows`) arrive
partitioned by key from their rank and go to the fused pass. Measured on 5M
and 10M rows (benchmarks/HISTORY.md, "Batch hopping: the pane aggregate
first"): the pane aggregate then the vectorised merge takes 0.36-0.67x the
fused pass's time at 10 to 600 rows per pane, and up to 1.6x at 1 to 3.5,
where Spark's hash aggregate barely shrinks the rows (0.93x on 2M rows at
3.5 once the pane partials' shuffle could be coalesced). Spark keeps no
statistics of the rows per pane, so `wid.spark.pane_plan` chooses between
the two from a sample of the input; ``spark.wid.paneMerge`` forces either.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import Window as W
from pyspark.sql import functions as F

from wid.aggregates.spark import SparkAgg, value
from wid.kernels import pane_merge
from wid.semantics.windowing import Panes
from wid.spark import arrow_merge
from wid.spark.columns import PANE, WINDOW_ID, Exact, exact, field, getter, ident, long_range, sql
from wid.spark.pane_plan import Choice
from wid.spark.spark_session import local_cores

BLK = "_wid_blk"
PREV = "_wid_prev"
NEXT = "_wid_next"
ROLE = "_wid_suffix"


def partials(df: DataFrame, keys: Sequence[str], bucket: Column | Exact, aggs: Sequence[SparkAgg],
             name: str = PANE) -> DataFrame:
    """``groupBy(keys, bucket)`` computing every aggregation's partial fields;
    the bucket column is named `name`."""
    exprs = [e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()]
    named = sql(f"{bucket.text} AS {ident(name)}") if isinstance(bucket, Exact) else bucket.alias(name)
    return df.groupBy(*keys, named).agg(*exprs)


def _running(panes: DataFrame, keys: Sequence[str], block: Column, aggs: Sequence[SparkAgg],
             descending: bool) -> tuple[DataFrame, dict[int, list[str]]]:
    """Add per-block shift constants, lag/lead and running prefix merges
    (and suffix merges when `descending`)."""
    asc = W.partitionBy(*keys, BLK).orderBy(PANE)
    run_asc = asc.rowsBetween(W.unboundedPreceding, W.currentRow)
    df = panes.withColumn(BLK, block)
    whole = asc.rowsBetween(W.unboundedPreceding, W.unboundedFollowing)  # shifts are constant per block
    shifts = [e.over(whole).alias(field(i, k)) for i, a in enumerate(aggs)
              for k, e in a.shift(getter(i, "p")).items()]
    if shifts:
        df = df.select("*", *shifts)
    names: dict[int, list[str]] = {}
    pre = []
    for i, a in enumerate(aggs):
        running = a.running(getter(i, "p"))
        names[i] = list(running)
        pre += [e.over(run_asc).alias(field(i, k, "pre")) for k, e in running.items()]
    df = df.select("*", F.lag(PANE).over(asc).alias(PREV), F.lead(PANE).over(asc).alias(NEXT), *pre)
    if descending:
        run_desc = W.partitionBy(*keys, BLK).orderBy(F.desc(PANE)).rowsBetween(W.unboundedPreceding, W.currentRow)
        suf = [e.over(run_desc).alias(field(i, k, "suf")) for i, a in enumerate(aggs)
               for k, e in a.running(getter(i, "p")).items()]
        df = df.select("*", *suf)
    return df, names


def _settled(aggs: Sequence[SparkAgg], names: dict[int, list[str]], role: Column | None,
             stage: str = "c") -> list[Column]:
    """Each aggregation's contribution fields, reading the suffix or the
    prefix running merge by `role` (prefix only when `role` is None)."""
    cols = []
    for i, a in enumerate(aggs):
        running = set(names[i])

        def get(name: str, i: int = i, running: set[str] = running) -> Column:
            if name not in running:
                return F.col(field(i, name))  # a shift constant
            pre = F.col(field(i, name, "pre"))
            return pre if role is None else F.when(role, F.col(field(i, name, "suf"))).otherwise(pre)

        cols += [e.alias(field(i, k, stage)) for k, e in a.settle(get).items()]
    return cols


VECTOR = "vectorised Arrow merge (prefix sums + sparse tables)"
FUSED = "fused vectorised Arrow merge (panes by bincount, windows by prefix sums + sparse tables)"
BLOCKS = "block prefix/suffix merge in Spark"
RUNNING = "running prefix merge in Spark"


def merges(kind: str, setting: str) -> tuple[str, ...]:
    """The ways panes may merge into windows, in the order they are tried:
    `kind` ``sliding`` (`sliding_panes`), ``rows`` (`sliding_rows`) or
    ``cumulative`` (`cumulative_panes`), under ``spark.wid.paneMerge`` =
    `setting` (`arrow_merge.CONF`; ``auto``: wid's choice). The first whose
    fields all merge in NumPy (the column types decide) runs, the fused one
    only where `wid.spark.pane_plan` chooses it; the last always can."""
    last = RUNNING if kind == "cumulative" else BLOCKS
    if setting == "spark":
        return (last,)
    return (*((FUSED,) if setting in ("fused", "auto") or kind == "rows" else ()), VECTOR, last)


def sliding_rows(rows: DataFrame, keys: Sequence[str], pane: Column, geo: Panes,
                 aggs: Sequence[SparkAgg]) -> tuple[DataFrame, str]:
    """Windows of `geo` straight from rows holding all rows of a key in one
    partition; `pane` is each row's pane index. The fused merge
    (`arrow_merge.fused`: no Spark aggregate) when every field merges in
    NumPy, else Spark's pane ``groupBy`` then `sliding`. Returns what
    `sliding` returns."""
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, shape="sliding", fields=(), length=geo.length,
                                hop=geo.hop, offset=geo.offset)
    fast = arrow_merge.fused(rows, keys, pane, spec, aggs)
    if fast is not None:
        return fast, FUSED
    return sliding(partials(rows, keys, pane, aggs), keys, geo, aggs)


def sliding_panes(rows: DataFrame, keys: Sequence[str], pane: Column, geo: Panes, aggs: Sequence[SparkAgg],
                  choice: Choice) -> tuple[DataFrame, str]:
    """Windows of `geo` from rows in any partitioning (`pane` is each row's
    pane index): under the fused `choice` (`wid.spark.pane_plan`), the rows
    partitioned by key to `sliding_rows`; else Spark's pane aggregate, its
    partials partitioned by key, then `sliding`. Returns what `sliding`
    returns."""
    if choice.fused:
        return sliding_rows(by_key(rows, keys), keys, pane, geo, aggs)
    return sliding(by_key(partials(rows, keys, pane, aggs), keys, even=False), keys, geo, aggs)


def cumulative_panes(rows: DataFrame, keys: Sequence[str], pane: Column, period: int | None, last: str,
                     aggs: Sequence[SparkAgg], choice: Choice) -> tuple[DataFrame, str]:
    """Landmark windows from rows in any partitioning (`last` is a column of
    `rows`): under the fused `choice` the fused pass, else Spark's pane
    aggregate, its partials partitioned by key, then `cumulative`."""
    if choice.fused:
        spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, shape="cumulative", fields=(), period=period,
                                    last=last)
        fast = arrow_merge.fused(by_key(rows, keys), keys, pane, spec, aggs)
        if fast is not None:
            return fast, FUSED
    grouped = rows.groupBy(*keys, pane.alias(PANE)).agg(
        F.max(last).alias(last), *[e.alias(field(i, k)) for i, a in enumerate(aggs) for k, e in a.partial().items()])
    return cumulative(by_key(grouped, keys, even=False), keys, period, last, aggs)


def sliding(panes: DataFrame, keys: Sequence[str], geo: Panes, aggs: Sequence[SparkAgg]) -> tuple[DataFrame, str]:
    """Windows of `geo` over pane partials (columns: keys, PANE, partial
    fields). Returns (keys, WINDOW_ID and each aggregation's combined fields
    ``field(i, name, "m")``, how they were merged); finish with `finished`."""
    length = geo.length
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, shape="sliding", fields=(), length=length, hop=geo.hop,
                                offset=geo.offset)
    fast = arrow_merge.vectorised(panes, keys, spec, aggs)
    if fast is not None:
        return fast, VECTOR
    q = exact(PANE)
    df, names = _running(panes, keys, (q // length).col, aggs, descending=True)
    bstart = exact(BLK) * length
    prev = Exact(f"coalesce({ident(PREV)}, {(bstart - 1).text})")
    nxt = Exact(f"least(coalesce({ident(NEXT)}, {(bstart + length).text}), {(bstart + length - 1).text})")
    # suffix role: the windows starting in (prev, q]
    suf = long_range((geo.last_window(prev) + 1).col, geo.last_window(q).col)
    # prefix role: the windows ending in [q, min(next, block end) - 1]
    pre = long_range(geo.first_window(q).col, (geo.first_window(nxt) - 1).col)
    df = df.select("*", F.explode(F.concat(suf, pre)).alias(WINDOW_ID))
    role = sql(f"{geo.first_pane(exact(WINDOW_ID)).text} >= {bstart.text}")
    df = df.select(*keys, F.col(WINDOW_ID), role.alias(ROLE), *_settled(aggs, names, role))
    combined = [e.alias(field(i, k, "m")) for i, a in enumerate(aggs)
                for k, e in a.combine(getter(i, "c"), F.col(ROLE)).items()]
    return df.groupBy(*keys, WINDOW_ID).agg(*combined), BLOCKS


def cumulative(panes: DataFrame, keys: Sequence[str], period: int | None, last: str,
               aggs: Sequence[SparkAgg]) -> tuple[DataFrame, str]:
    """Landmark windows over pane partials: window w covers the panes of its
    period up to w. `period` is the period length in panes (None: one
    unbounded period); windows run up to the pane in column `last`. Returns
    keys, WINDOW_ID and the combined fields (``field(i, name, "m")``)."""
    spec = pane_merge.MergeSpec(keys=tuple(keys), pane=PANE, shape="cumulative", fields=(), period=period, last=last)
    fast = arrow_merge.vectorised(panes, keys, spec, aggs)
    if fast is not None:
        return fast, VECTOR
    block = Exact("0L") if period is None else exact(PANE) // period
    df, names = _running(panes, keys, block.col, aggs, descending=False)
    past = (exact(last) + 1).text
    stop = f"coalesce({ident(NEXT)}, {past})" if period is None else \
        f"least(coalesce({ident(NEXT)}, {past}), {((exact(BLK) + 1) * period).text})"
    df = df.select("*", F.explode(long_range(F.col(PANE), sql(f"least({stop}, {past}) - 1"))).alias(WINDOW_ID))
    return df.select(*keys, WINDOW_ID, *_settled(aggs, names, None, stage="m")), RUNNING


def finished(aggs: Sequence[SparkAgg], stage: str = "m") -> list[Column]:
    """Each aggregation's output value, named by its alias (for
    `wid.spark.output.assemble`). Stage ``"p"`` reads partial fields (direct
    evaluation), stage ``"m"`` combined ones."""
    def out(i: int, a: SparkAgg) -> Column:
        return value(a, getter(i, stage)) if stage == "p" else a.finish(getter(i, stage))
    return [out(i, a).alias(a.agg.as_) for i, a in enumerate(aggs)]


def by_key(rows: DataFrame, keys: Sequence[str], even: bool = True) -> DataFrame:
    """`rows` hash-partitioned by the keys (all of a key's rows in one
    partition); one partition without keys. `even`: with an explicit
    partition count, so adaptive execution does not merge partitions into
    uneven tasks (rows); else adaptive execution may coalesce small
    partitions (pane partials, often a few MB, where each Python task's
    fixed cost dominates: measured 0.61 s against 0.36 s for a hopping query
    over 1M rows, and 1.22 s against 1.07 s over 10M)."""
    if not keys:
        return rows.repartition(1)
    if not even:
        return rows.repartition(*keys)
    return rows.repartition(partitions_for_rows(rows.sparkSession), *keys)


def partitions_for_rows(session: SparkSession) -> int:
    """How many partitions `by_key` spreads rows over: four per core Spark
    runs tasks on (``spark.default.parallelism`` when set, else the cores of
    a local master), at least ``spark.sql.shuffle.partitions``. Read from the
    session's settings only, so it is the same on Spark Connect."""
    conf = session.conf
    shuffle = int(conf.get("spark.sql.shuffle.partitions", None) or "8")
    cores = conf.get("spark.default.parallelism", None)
    parallelism = int(cores) if cores else local_cores(str(conf.get("spark.master", None) or "")) or shuffle
    return max(shuffle, 4 * parallelism)
