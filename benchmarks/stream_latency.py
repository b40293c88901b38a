"""Latency on one machine: Kafka to Kafka, wid beside Spark's own
micro-batch query at the same trigger, and beside real-time mode.

    python -m benchmarks.stream_latency [--rates 1000,5000] [--seconds 60] [--triggers "0 seconds,1 second"]

A local broker (`tools.kafka_broker`), ``local[4]``, 1 shuffle partition.
At each rate, messages stamped with their produce time go into a
1-partition topic for `seconds` seconds, through:

- wid's pipeline (`benchmarks.scenarios.kafka.LATENCY_PIPELINE`: a
  tumbling 1-minute window per key of count and max of a per-key sequence
  number, ``emit = "on_update"``, the WID operator) at each trigger, and
  with ``trigger = "real-time"`` (Spark's real-time mode);
- Spark's own query of the same window, ``withWatermark`` +
  ``groupBy(k, window(...))`` in update mode
  (`benchmarks.scenarios.kafka.spark_latency_query`), at each trigger.

A row's latency is the timestamp of the first output message of its key
whose max sequence covers it, less the row's own timestamp: from event
production to the window's message. It prints p50 and p99 per engine,
trigger and rate, and the ratio wid / Spark of p50 at each trigger.
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
    from tools import kafka_broker
    from wid.io.kafka import with_connector

    broker = kafka_broker.start(Path(tempfile.mkdtemp(prefix="wid-bench-latency-")))
    try:
        spark = session("local[4]", shuffle_partitions=1, more=with_connector({}, pyspark.__version__))
        work = Path(tempfile.mkdtemp(prefix="wid-bench-latency-ck-"))
        runs = []
        for rate in rates:
            for trigger in triggers:
                for engine in ("spark", "wid"):
                    runs.append(measure_latency(spark, broker.bootstrap_servers, trigger, seconds, work, rate, engine))
                mine, theirs = runs[-1]["p50_ms"], runs[-2]["p50_ms"]
                print(f"  {rate}/s at {trigger}: wid / Spark p50 {mine / max(1, theirs):.2f}x (target <= 1.0)",
                      flush=True)
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
