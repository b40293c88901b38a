"""Latency on one machine, the small micro-batch taken apart: Kafka to
Kafka, wid beside Spark's own micro-batch query and beside the floor of
Python state, at the same trigger, and real-time mode.

    python -m benchmarks.stream_latency [--rates 1000,5000] [--seconds 60] [--triggers "0 seconds,1 second"]

A local broker (`tools.kafka_broker`), ``local[4]``, 1 shuffle partition.
At each rate, messages stamped with their produce time go into a
1-partition topic for `seconds` seconds, through, at each trigger:

- ``spark``: Spark's own query of the window, ``withWatermark`` +
  ``groupBy(k, window(...))`` in update mode;
- ``floor``: a do-nothing ``transformWithStateInPandas`` per key, what
  any Python stateful operator pays per micro-batch;
- ``operator``: the WID operator alone, its window rows to Kafka;
- ``wid``: `wid run`'s pipeline (`benchmarks.scenarios.kafka.LATENCY_PIPELINE`:
  a tumbling 1-minute window per key of count and max of a per-key
  sequence number, ``emit = "on_update"``), which adds its
  ``foreachBatch`` writer, dead letters and observed counts;

(`benchmarks.scenarios.kafka_latency`), then the pipeline with ``trigger
= "real-time"`` (Spark's real-time mode).

A row's latency is the timestamp of the first output message of its key
whose max sequence covers it, less the row's own timestamp: from event
production to the window's message. It prints p50 and p99 per query,
trigger and rate, the median micro-batch and its Spark jobs, and the p50
ratios: wid / Spark (target <= 1.0), and, for when the floor alone is
above Spark's, operator / floor (<= 1.1) and wid / floor (<= 1.2).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def measure(rates: list[int], seconds: int, triggers: list[str]) -> dict[str, Any]:
    """Every run (see the module docstring); the record of all of them."""
    import pyspark

    from benchmarks.harness import machine, save, session
    from benchmarks.scenarios.kafka import measure_latency
    from benchmarks.scenarios.kafka_latency import QUERIES, SESSION
    from tools import kafka_broker
    from wid.io.kafka import with_connector

    broker = kafka_broker.start(Path(tempfile.mkdtemp(prefix="wid-bench-latency-")))
    try:
        spark = session("local[4]", shuffle_partitions=1, more=with_connector(SESSION, pyspark.__version__))
        work = Path(tempfile.mkdtemp(prefix="wid-bench-latency-ck-"))
        runs: list[dict[str, Any]] = []
        for rate in rates:
            for trigger in triggers:
                p50 = {engine: measure_latency(spark, broker.bootstrap_servers, trigger, seconds, work, rate, engine)
                       for engine in (*QUERIES, "wid")}
                runs.extend(p50.values())
                r = {f"{a}/{b}": p50[a]["p50_ms"] / max(1, p50[b]["p50_ms"])
                     for a, b in (("wid", "spark"), ("floor", "spark"), ("operator", "floor"), ("wid", "floor"))}
                print(f"  {rate}/s at {trigger}: p50 wid / Spark {r['wid/spark']:.2f}x (target <= 1.0); the floor / "
                      f"Spark {r['floor/spark']:.2f}x; operator / floor {r['operator/floor']:.2f}x (<= 1.1); "
                      f"wid / floor {r['wid/floor']:.2f}x (<= 1.2)", flush=True)
            runs.append(measure_latency(spark, broker.bootstrap_servers, "real-time", seconds, work, rate, "wid"))
        record = {"scenario": "stream_latency", "machine": machine(), "seconds": seconds, "runs": runs}
        save("stream_latency", record)
        return record
    finally:
        kafka_broker.stop(broker)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rates", default="1000,5000")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--triggers", default="0 seconds,1 second")
    args = parser.parse_args(argv)
    record = measure([int(r) for r in args.rates.split(",")], args.seconds, args.triggers.split(","))
    print(json.dumps(record["runs"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
