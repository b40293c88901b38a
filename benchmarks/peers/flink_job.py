"""One Flink benchmark job, run by `benchmarks.peers.flink` with the Python
of the PyFlink environment (``benchmarks/.venv-flink``): it imports only
PyFlink and the standard library.

    python flink_job.py JOB.json     (or the JSON on stdin)

The job is a JSON object:

- ``ddl``: the ``CREATE TABLE`` statements of the sources;
- ``sql``: a SELECT over them;
- ``out``: the directory the warm-up's output goes to (header-less CSV,
  the SELECT's columns in order);
- ``repeats``: how many timed runs follow;
- ``parallelism``: Flink's default parallelism.

A TableEnvironment in streaming mode, session time zone UTC, runs the
SELECT once into a ``filesystem`` CSV sink at ``out`` (the warm-up), then
`repeats` times into a ``blackhole`` sink, which consumes every column. A
timed run is the submission of the INSERT (planning, and the start of a
local cluster for the job) and the wait for its end; creating the
environment is not timed. The last line printed to stdout is ``{"runs_s":
[...], "net_runtime_s": [...]}``, the second being Flink's own measure of
each job (see `insert`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pyflink.table import EnvironmentSettings, Table, TableDescriptor, TableEnvironment


def environment(parallelism: int) -> TableEnvironment:
    """A streaming TableEnvironment in UTC with `parallelism`."""
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("table.local-time-zone", "UTC")
    config.set("parallelism.default", str(parallelism))
    return env


def insert(table: Table, sink: TableDescriptor) -> tuple[float, float]:
    """Runs `table` into `sink`; returns the seconds from submission to the
    job's end, and Flink's net runtime of the job (from the job's start on
    the local cluster to its end, so without planning and cluster start)."""
    started = time.perf_counter()
    result = table.execute_insert(sink)
    result.wait()
    elapsed = time.perf_counter() - started
    client = result.get_job_client()
    net_ms = client.get_job_execution_result().result().get_net_runtime() if client else 0
    return elapsed, net_ms / 1000


def run(job: dict[str, Any]) -> list[tuple[float, float]]:
    """Run `job` (see the module docstring); returns each timed run's
    seconds and Flink's net runtime (see `insert`)."""
    env = environment(int(job["parallelism"]))
    for statement in job["ddl"]:
        env.execute_sql(statement)
    table = env.sql_query(job["sql"])
    insert(table, TableDescriptor.for_connector("filesystem").option("path", job["out"])
           .format("csv").build())
    blackhole = TableDescriptor.for_connector("blackhole").build()
    return [insert(table, blackhole) for _ in range(int(job["repeats"]))]


def main() -> None:
    text = Path(sys.argv[1]).read_text() if len(sys.argv) > 1 else sys.stdin.read()
    runs = run(json.loads(text))
    print(json.dumps({"runs_s": [r for r, _ in runs], "net_runtime_s": [n for _, n in runs]}),
          flush=True)


if __name__ == "__main__":
    main()
