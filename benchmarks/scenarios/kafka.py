"""Kafka: wid against hand-written Spark on the same topic and cores, and
event-to-sink latency in micro-batches against Spark's real-time mode.

    python -m benchmarks run --only kafka [--quick] [--repeats 3]

The scenario starts a local broker (`tools.kafka_broker`) and runs each
part in its own process, because a Spark session's cores and jars are fixed
when its JVM starts (``python -m benchmarks.scenarios.kafka --part ...``
prints its record as JSON):

- **throughput** (``local[2]``, 2 shuffle partitions): `ROWS` events (1,000
  keys, event times in order over one day, JSON values, the message
  timestamp the event time) in a 2-partition topic, read whole with the
  available-now trigger, each micro-batch written to ``noop``. wid runs the
  Window as planned (`wid.window_result` on Kafka rows: the WID operator,
  one watermark per partition); the peer is the hand-written
  ``withWatermark`` + ``groupBy(k, window(...))`` query of
  `benchmarks.stream_windows` on the same decoded rows. Tumbling 1 min and
  hopping 60 min / 1 min; one checked run each (the windows emitted must
  agree), then per engine one untimed run and `repeats` timed runs (the
  hand-written query's together, then wid's, as `benchmarks.stream_windows`
  runs them: a query right after the other engine's pays for its state
  store's clean-up). Targets: tumbling >= 0.9x, hopping >= 10x. Last,
  the floor: the topic read and decoded with no window at all, each
  micro-batch to ``noop``; Spark's hopping time over it is the most any
  engine reading this topic could gain.
- **latency** (``local[4]``: real-time mode runs every stage's tasks at
  once, and its two queries need 3 slots; 1 shuffle partition): `RATE`
  messages a second for `SECONDS` seconds, stamped with their produce time,
  into a 1-partition topic, through `wid run`'s pipeline with ``trigger =
  "1 second"`` (the WID operator, ``emit = "on_update"``) and then
  ``trigger = "real-time"``, from Kafka to Kafka: a tumbling 1-minute
  window per key of count and max of a per-key sequence number. A row's
  latency is the timestamp of the first output message whose max sequence
  covers it, less its own timestamp. Target: real-time p50 <= 0.5x the 1 s
  micro-batch p50.

- **delivery**: ``delivery = "exactly-once"`` against ``"at-least-once"``,
  throughput and latency (`benchmarks.scenarios.kafka_delivery`).

PyFlink is not run here: its Kafka connector is a separate jar of Flink's
release, which `python -m benchmarks flink-setup` does not fetch.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

TITLE = "kafka: wid and hand-written Spark on one topic; micro-batch against real-time latency"
ROWS, QUICK_ROWS, KEYS_N = 5_000_000, 200_000, 1000
RATE, SECONDS, QUICK_SECONDS = 1000, 60, 20
DAY_MS = 86_400_000
T0 = 1_700_000_000_000


def run(ctx: Any) -> list[dict[str, Any]]:
    """Start a broker, run both parts in their own processes, print and return their records."""
    from tools import kafka_broker

    broker = kafka_broker.start(Path(tempfile.mkdtemp(prefix="wid-bench-kafka-")))
    try:
        records = []
        for part in ("throughput", "latency", "delivery"):
            done = subprocess.run([sys.executable, "-m", "benchmarks.scenarios.kafka", "--part", part,
                                   "--bootstrap", broker.bootstrap_servers, "--repeats", str(ctx.repeats),
                                   *(["--quick"] if ctx.quick else [])], capture_output=True, text=True, check=False)
            print(done.stdout.split("RECORD ")[0], end="", flush=True)
            if done.returncode != 0:
                raise RuntimeError(f"the {part} part failed:\n{done.stderr[-4000:]}")
            records.append(json.loads(done.stdout.split("RECORD ", 1)[1]))
        return records
    finally:
        kafka_broker.stop(broker)


# -- throughput ----------------------------------------------------------------

def produce_events(bootstrap: str, topic: str, rows: int) -> None:
    """`rows` events over one day in event-time order, alternating over 2 partitions."""
    from tools.kafka_client import create_topic, produce

    create_topic(bootstrap, topic, 2)
    step = DAY_MS / rows
    produce(bootstrap, topic, ((i % 2, T0 + int(i * step), None,
                                json.dumps({"k": f"k{(i * 7919) % KEYS_N}", "v": float(i % 100)}).encode())
                               for i in range(rows)))


def throughput(bootstrap: str, quick: bool, repeats: int) -> dict[str, Any]:
    """The throughput part's record (see the module docstring)."""
    import wid
    from benchmarks.harness import session
    from benchmarks.stream_windows import checked, hand_written, timed, windows
    from wid.io.kafka import read_kafka, with_connector
    from wid.spec.pipeline import SourceSpec

    rows = QUICK_ROWS if quick else ROWS
    topic = f"events-{int(time.time())}"
    started = time.perf_counter()
    produce_events(bootstrap, topic, rows)
    print(f"  produced {rows:,} events in {time.perf_counter() - started:.1f} s", flush=True)
    import pyspark

    spark = session(shuffle_partitions=2, more=with_connector({}, pyspark.__version__))
    source = SourceSpec("kafka", topic=topic, bootstrap_servers=bootstrap, schema="k STRING, v DOUBLE")
    work = Path(tempfile.mkdtemp(prefix="wid-bench-kafka-tp-"))
    record: dict[str, Any] = {"scenario": "kafka_throughput", "rows": rows, "keys": KEYS_N}
    for kind, target in (("tumbling", 0.9), ("hopping", 10.0)):
        queries = {"spark": lambda k=kind: hand_written(read_kafka(spark, source).withColumnRenamed("_event_ts", "ts"), k),
                   "wid": lambda k=kind: wid.window_result(read_kafka(spark, source).withColumnRenamed(
                       "_event_ts", "ts"), windows()[k]).output}
        emitted = {name: checked(q(), "append", str(work / f"{kind}-{name}-checked")) for name, q in queries.items()}
        assert emitted["spark"] == emitted["wid"], emitted
        runs: dict[str, list[float]] = {}
        for name, q in queries.items():  # the JVM's runs together, then wid's, each after one untimed run
            timed(q(), "append", str(work / f"{kind}-{name}-warm"))
            runs[name] = [timed(q(), "append", str(work / f"{kind}-{name}-{i}")) for i in range(repeats)]
        medians = {name: statistics.median(r) for name, r in runs.items()}
        ratio = medians["spark"] / medians["wid"]
        record[kind] = {"emitted": emitted["wid"], "runs_s": runs, "ratio": ratio, "target": target}
        print(f"  {kind}: Spark {medians['spark']:.2f} s, wid {medians['wid']:.2f} s ({rows / medians['wid']:,.0f} "
              f"rows/s): wid / Spark throughput {ratio:.2f}x (target >= {target})", flush=True)
    floor = statistics.median(timed(read_kafka(spark, source), "append", str(work / f"floor-{i}"))
                              for i in range(repeats))
    record["read_floor_s"], record["hopping_ratio_ceiling"] = floor, statistics.median(
        record["hopping"]["runs_s"]["spark"]) / floor
    print(f"  reading and decoding the topic, no window ({floor:.2f} s): no engine that reads it can beat "
          f"Spark's hopping query by more than {record['hopping_ratio_ceiling']:.1f}x", flush=True)
    return record


# -- latency -------------------------------------------------------------------

LATENCY_PIPELINE = """
name = "latency"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "k STRING, seq BIGINT"
options = {{ startingOffsets = "latest" }}

[transform.window]
kind = "tumbling"
duration_ms = 60000
group_by = ["k"]
emit = "on_update"
max_groups_per_window = 100

[[transform.window.aggregations]]
agg = "count"
as = "n"

[[transform.window.aggregations]]
agg = "max"
column = "seq"
as = "max_seq"

[stream]
trigger = "{trigger}"
checkpoint = "{checkpoint}"

[target]
kind = "kafka"
topic = "{out}"
bootstrap_servers = "{bootstrap}"

[dead_letter]
kind = "kafka"
topic = "{out}-dead"
bootstrap_servers = "{bootstrap}"
"""


def latencies_ms(produced: list[tuple[str, int, int]], outputs: list[tuple[int, str, int]]) -> list[int]:
    """Each produced (key, seq, timestamp ms) row's wait for the first output
    (timestamp ms, key, max_seq) of its key covering it; rows never covered
    are left out."""
    by_key: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for ts, key, max_seq in sorted(outputs):
        covered, times = by_key[key]
        covered.append(max(max_seq, covered[-1] if covered else -1))
        times.append(ts)
    out = []
    for key, seq, ts in produced:
        covered, times = by_key[key]
        at = bisect.bisect_left(covered, seq)
        if at < len(covered):
            out.append(times[at] - ts)
    return out


def produce_paced(bootstrap: str, topic: str, seconds: int, rate: int = RATE) -> list[tuple[str, int, int]]:
    """`rate` messages a second for `seconds`, each stamped with its produce
    time, keys ``k0``..``k9`` in turn with a per-key sequence number;
    returns (key, seq, timestamp ms) of each."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    produced: list[tuple[str, int, int]] = []
    seq: dict[str, int] = defaultdict(int)
    start = time.time()
    for i in range(seconds * rate):
        if (wait := start + i / rate - time.time()) > 0:
            time.sleep(wait)
        key, now_ms = f"k{i % 10}", int(time.time() * 1000)
        producer.produce(topic, json.dumps({"k": key, "seq": seq[key]}).encode(), partition=0, timestamp=now_ms)
        producer.poll(0)
        produced.append((key, seq[key], now_ms))
        seq[key] += 1
    producer.flush(60)
    return produced


def measure_latency(spark: Any, bootstrap: str, trigger: str, seconds: int, work: Path, rate: int = RATE,
                    engine: str = "wid") -> dict[str, Any]:
    """Run the latency pipeline (`engine` ``wid``: `wid run`'s; ``spark``,
    ``floor``, ``operator``: `benchmarks.scenarios.kafka_latency.QUERIES`)
    with `trigger` while producing `rate` messages a second for `seconds`;
    returns its latency percentiles (ms) and its micro-batches' jobs and
    times (`benchmarks.scenarios.kafka_latency.micro_batches`)."""
    from benchmarks.scenarios.kafka_latency import QUERIES, micro_batches, ungrouped_jobs
    from tools.kafka_client import create_topic, read_all
    from wid.pipelines.run import run as run_pipeline
    from wid.spec.toml_io import loads_pipeline

    name = f"{engine}-{trigger.replace(' ', '-')}-{rate}"
    topic, out = f"latency-in-{name}-{int(time.time())}", f"latency-out-{name}-{int(time.time())}"
    create_topic(bootstrap, topic, 1)
    create_topic(bootstrap, out, 1)
    runner, before = None, ungrouped_jobs(spark)
    if engine == "wid":
        spec = loads_pipeline(LATENCY_PIPELINE.format(topic=topic, out=out, bootstrap=bootstrap, trigger=trigger,
                                                      checkpoint=work / f"ck-{name}"))
        runner = threading.Thread(target=run_pipeline, args=(spec, spark), daemon=True)
        runner.start()
    else:
        QUERIES[engine](spark, bootstrap, topic, out, trigger, work / f"ck-{name}")
    while len(spark.streams.active) < (2 if trigger == "real-time" else 1):
        time.sleep(0.2)
    time.sleep(15)  # past start-up: the query reads from the latest offsets once its tasks run
    produced = produce_paced(bootstrap, topic, seconds, rate)
    time.sleep(10)  # the last rows' outputs
    batches = micro_batches(spark, list(spark.streams.active), before)
    for query in spark.streams.active:
        query.stop()
    if runner is not None:
        runner.join(120)
    outputs = [(m.timestamp_ms, v["k"], v["max_seq"]) for m in read_all(bootstrap, out)
               if (v := json.loads(m.value or b"null"))]
    waits = sorted(latencies_ms(produced, outputs))
    if not waits:
        raise RuntimeError(f"no output covered a produced row ({engine}, {trigger})")
    pick = lambda q: waits[min(len(waits) - 1, int(q * len(waits)))]  # noqa: E731
    result = {"engine": engine, "trigger": trigger, "rate_per_s": rate, "rows": len(produced),
              "rows_covered": len(waits), "outputs": len(outputs), "p50_ms": pick(0.5), "p99_ms": pick(0.99),
              "max_ms": waits[-1], **batches}
    print(f"  {engine:8s} {trigger:12s} {rate:5d}/s  p50 {result['p50_ms']:6d} ms  p99 {result['p99_ms']:6d} ms  "
          f"micro-batch p50 {batches['micro_batch_ms_p50']:5.0f} ms (addBatch {batches['add_batch_ms_p50']:5.0f}), "
          f"{batches['jobs_per_micro_batch']} jobs each  ({len(waits):,} of {len(produced):,} rows covered by "
          f"{len(outputs):,} output messages)", flush=True)
    return result


def latency(bootstrap: str, quick: bool) -> dict[str, Any]:
    """The latency part's record (see the module docstring)."""
    import pyspark

    from benchmarks.harness import session
    from wid.io.kafka import with_connector

    spark = session("local[4]", shuffle_partitions=1, more=with_connector({}, pyspark.__version__))
    work = Path(tempfile.mkdtemp(prefix="wid-bench-kafka-lat-"))
    seconds = QUICK_SECONDS if quick else SECONDS
    runs = {trigger: measure_latency(spark, bootstrap, trigger, seconds, work) for trigger in ("1 second", "real-time")}
    ratio = runs["real-time"]["p50_ms"] / max(1, runs["1 second"]["p50_ms"])
    print(f"  real-time p50 / 1 s micro-batch p50: {ratio:.2f}x (target <= 0.5)", flush=True)
    return {"scenario": "kafka_latency", "rate_per_s": RATE, "seconds": seconds, "runs": runs, "ratio_p50": ratio,
            "target": 0.5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("throughput", "latency", "delivery"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.part == "delivery":  # exactly-once against at-least-once (benchmarks.scenarios.kafka_delivery)
        from benchmarks.scenarios.kafka_delivery import delivery

        record = delivery(args.bootstrap, args.quick, args.repeats)
    else:
        record = throughput(args.bootstrap, args.quick, args.repeats) if args.part == "throughput" else \
            latency(args.bootstrap, args.quick)
    print("RECORD " + json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
