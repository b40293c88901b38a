"""What wid costs over Spark's own operators where both do the same work.

    python -m benchmarks run --only overhead [--quick] [--repeats 3]

Every part runs wid and its Spark peer side by side in this process, each
checked against the other before its time counts (`benchmarks.suite`):

- ``ematix``: tumbling 1 min over 100 keys, 1M and 10M rows read from
  Parquet (100,000 with --quick): ``wid.aggregate`` against
  ``groupBy(k, window(ts, 1 min))`` (target wid / Spark <= 1.05x);
- ``nexmark``: q5 to q12 over 10M events (500,000 with --quick): wid's
  queries against Spark's (`benchmarks.nexmark`; target <= 1.05x each),
  and where Spark's query skips an input check wid makes at a measurable
  cost (q12's NULL bidders), against Spark's query making it too;
- ``streaming``: the streaming scenario's stream (`benchmarks.scenarios.
  streaming`: 2M rows, 100 keys, 16 files, 2 a micro-batch), on the WID
  operator: tumbling 1 min against the hand-written ``withWatermark`` +
  ``groupBy(window())`` query (target >= 0.95x its throughput), and hopping
  10 min / 1 min. Beside both runs Spark's floor for a Python stateful
  operator over the same micro-batches (`benchmarks.harness.tws_floor`;
  target wid <= 1.2x per micro-batch). The floor against the hand-written
  query bounds what any Python stateful operator can reach.

In-process engines are timed in turns after all have warmed up
(`benchmarks.suite.in_turns`); a short batch query gets more rounds, up to
3 times those asked for, until its runs add up to `LEAST_S`.
"""

from __future__ import annotations

import tempfile
from typing import Any

from benchmarks import data, suite
from benchmarks.harness import tws_floor
from benchmarks.nexmark import QUERIES, generator, queries_spark, queries_wid
from benchmarks.peers.spark_peers import spark_window_engine, wid_engine
from benchmarks.query import KEYS, WindowQuery
from benchmarks.scenarios import nexmark, streaming

LEAST_S = 6.0  # a batch query's timed runs add up to this (more rounds for short queries, `suite.in_turns`)
TITLE = "wid against Spark's own operators: ematix, Nexmark q5-q12, streaming and the stateful floor"
EMATIX = WindowQuery("tumbling", 60_000)


def ratio_of(record: dict[str, Any], peer: str) -> float | None:
    """wid's median time over `peer`'s in `record` (None when either did
    not run or they disagree)."""
    by = {e["engine"]: e for e in record["engines"]}
    if not all(by.get(n, {}).get("median_s") for n in ("wid", peer)) or by[peer].get("agrees") is False:
        return None
    return float(by["wid"]["median_s"]) / float(by[peer]["median_s"])


def ematix(ctx: Any) -> list[dict[str, Any]]:
    records = []
    for rows in (100_000,) if ctx.quick else (1_000_000, 10_000_000):
        where = data.events(rows, 100)
        s = suite.Scenario(f"overhead_ematix_{rows}", f"{EMATIX.label}, 100 keys, {rows:,} rows", rows, KEYS,
                           [wid_engine(ctx.spark, EMATIX, where), spark_window_engine(ctx.spark, EMATIX, where)])
        records.append(suite.run_scenario(s, ctx.repeats, LEAST_S))
        records[-1]["ratio"] = ratio_of(records[-1], "spark window()")
    return records


def nexmark_queries(ctx: Any) -> list[dict[str, Any]]:
    events = nexmark.EVENTS[ctx.quick]
    where = generator.nexmark(events, nexmark.SEED)
    records = []
    for q in QUERIES.values():
        checked = queries_spark.CHECKED.get(q.name)
        engines = [suite.engine("wid", nexmark.on_spark(ctx.spark, queries_wid.QUERY[q.name], where)),
                   suite.engine("spark", nexmark.on_spark(ctx.spark, queries_spark.QUERY[q.name], where)),
                   *([suite.engine(CHECKED, nexmark.on_spark(ctx.spark, checked, where))] if checked else [])]
        s = suite.Scenario(f"overhead_nexmark_{q.name}", q.title, events, q.keys, engines, {"events": events})
        records.append(suite.run_scenario(s, ctx.repeats, LEAST_S))
        records[-1]["ratio"] = ratio_of(records[-1], "spark")
        if checked:
            records[-1]["checked"] = ratio_of(records[-1], CHECKED)
    return records


def streams(ctx: Any) -> list[dict[str, Any]]:
    rows, files = (200_000, streaming.FILES // 4) if ctx.quick else (2_000_000, streaming.FILES)
    where = streaming.landed(data.events(rows, streaming.KEYS_N), files)
    batches = -(-(files + 1) // streaming.PER_TRIGGER)  # the flush file is one more
    records = []
    for q, peer in ((streaming.QUERIES[0], "spark streaming"), (streaming.QUERIES[1], None)):
        planned: list[str] = []
        build, bound = streaming.wid_build(q, planned)
        engines = [streaming.stream_engine(ctx.spark, "wid", where, build, bound),
                   *([streaming.stream_engine(ctx.spark, peer, where, streaming.spark_build(q), None)] if peer else []),
                   suite.engine(FLOOR, lambda _collect: _floor(ctx, where))]
        s = suite.Scenario(f"overhead_streaming_{q.kind}", f"{q.label}, {rows:,} rows, {files} files, "
                           f"{streaming.PER_TRIGGER} per micro-batch", rows, KEYS, engines, {"plan": planned})
        record = suite.run_scenario(s, ctx.repeats)
        record["ratio"] = ratio_of(record, peer or FLOOR)  # time: a throughput ratio is its inverse
        record["over_floor"] = ratio_of(record, FLOOR)
        each = ", ".join(f"{e['engine']} {e['median_s'] / batches:.3f} s" for e in record["engines"] if e["median_s"])
        print(f"  a micro-batch: {each} ({batches} micro-batches; plan: {planned[0] if planned else '?'})")
        records.append(record)
    return records


FLOOR = "do-nothing floor"
CHECKED = "spark, wid's checks"  # Spark's query with wid's input checks (`queries_spark.CHECKED`)


def _floor(ctx: Any, where: Any) -> None:
    """One run of Spark's floor for a Python stateful operator over the
    stream's micro-batches (`benchmarks.harness.tws_floor`); no output."""
    schema = ctx.spark.read.parquet(str(where)).schema
    source = ctx.spark.readStream.schema(schema).option("maxFilesPerTrigger", streaming.PER_TRIGGER).parquet(str(where))
    partitions = int(ctx.spark.conf.get("spark.sql.shuffle.partitions"))
    with tempfile.TemporaryDirectory(prefix="wid-bench-floor-") as ck:
        tws_floor(source, "k", partitions, ck)


TARGETS = (("ematix", "wid / Spark window()", "<= 1.05"), ("nexmark", "wid / Spark", "<= 1.05"),
           ("streaming_tumbling", "wid / hand-written Spark (time; throughput ratio is its inverse, >= 0.95)",
            "<= 1.053"), ("streaming_hopping", "WID operator / do-nothing floor", "<= 1.2"))


def run(ctx: Any) -> list[dict[str, Any]]:
    records = [*ematix(ctx), *nexmark_queries(ctx), *streams(ctx)]
    print("overhead, one run on this machine:")
    for r in records:
        target = next((f"{what} {t}" for part, what, t in TARGETS if part in r["scenario"]), "")
        value = "not run" if r.get("ratio") is None else f"{r['ratio']:.2f}x"
        print(f"  {r['scenario']:32s} {value:>8s}   target {target}")
        if r.get("checked"):
            print(f"  {'':32s} {r['checked']:7.2f}x   wid / Spark's query with wid's input checks (no target)")
        if r.get("over_floor") and r["over_floor"] != r["ratio"]:
            print(f"  {'':32s} {r['over_floor']:7.2f}x   WID operator / do-nothing floor (target <= 1.2); the floor "
                  f"alone is {r['ratio'] / r['over_floor']:.2f}x the hand-written query")
    return records
