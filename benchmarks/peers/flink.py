"""Apache Flink (PyFlink, Table API in streaming mode) as a peer engine.

PyFlink pins pyarrow < 21, py4j 0.10.9.7 and cloudpickle 2.2, which clash
with PySpark 4 and wid, so it lives in its own virtual environment,
``benchmarks/.venv-flink``, made by `setup` (``python -m benchmarks
flink-setup``). This module runs in wid's environment and never imports
PyFlink: an engine writes a JSON job and runs `benchmarks.peers.flink_job`
with the Flink environment's Python, in a subprocess sampled by
`suite.PeakRss` (Flink's JVM is a ``java`` child of that Python).

A timed run is one Flink job from submission to end, as a user of local
PyFlink sees it: planning and the start of the job's local cluster are in
it (about 2 s on 2 busy cores). The table's note gives Flink's own net
runtime of the jobs too, which leaves these out.

Inputs are header-less CSV (`benchmarks.data`); the SQL text comes from
`benchmarks.peers.flink_sql`. The warm-up's output comes back through a
CSV directory and is read with pandas: integer columns as int64, other
numbers as float64, strings as str.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from benchmarks import suite
from benchmarks.peers import flink_sql
from benchmarks.query import OUTPUT, WindowQuery

VERSION = "2.3.0"
VENV = Path(__file__).parents[1] / ".venv-flink"
PYTHON = VENV / "bin" / "python"
JOB = Path(__file__).with_name("flink_job.py")
SETUP_HINT = "run: python -m benchmarks flink-setup"


def setup() -> None:
    """Make ``benchmarks/.venv-flink`` with this Python and install
    ``apache-flink`` `VERSION` into it (a no-op when already there)."""
    steps = [[sys.executable, "-m", "venv", str(VENV)],
             [str(PYTHON), "-m", "pip", "install", "--upgrade", "pip"],
             [str(PYTHON), "-m", "pip", "install", f"apache-flink=={VERSION}"]]
    for step in steps:
        print("$", " ".join(step), flush=True)
        subprocess.run(step, check=True)
    print(f"PyFlink {VERSION} is ready in {VENV}")


def flink_engine(name: str, tables: Mapping[str, tuple[Path, str]], sql: str,
                 columns: Sequence[str], parallelism: int = 2) -> suite.Engine:
    """An engine running `sql` on Flink. `tables` maps a table name to (a
    header-less CSV file, or a directory of them; its columns' DDL, with
    computed columns and the WATERMARK clause); `sql` is a SELECT whose
    columns are `columns`. Its `measure` raises `suite.Unavailable` when
    the Flink environment is missing, RuntimeError when the job fails."""
    ddl = [flink_sql.csv_source(t, cols, str(Path(path).resolve()))
           for t, (path, cols) in tables.items()]

    def measure(repeats: int) -> suite.Run:
        if not PYTHON.exists():
            raise suite.Unavailable(f"PyFlink is not installed in {VENV}; {SETUP_HINT}")
        with tempfile.TemporaryDirectory(prefix="flink-") as tmp:
            out = Path(tmp) / "out"
            job = {"ddl": ddl, "sql": sql, "out": str(out), "repeats": repeats,
                   "parallelism": parallelism}
            with suite.PeakRss() as rss:
                runs, net = run_job(job)
            note = f"Flink's net job runtime median {statistics.median(net):.2f} s" if net else ""
            return suite.Run(name, runs, read_output(out, columns), rss.peak, note)

    return suite.Engine(name, measure)


def run_job(job: Mapping[str, object]) -> tuple[list[float], list[float]]:
    """Run `job` with `flink_job.py` in the Flink environment; returns the
    timed runs' seconds (submission to end) and Flink's net runtime of each
    (the job alone, without planning and the local cluster's start).
    Raises RuntimeError with the end of the job's stderr, without
    Java stack frames."""
    done = subprocess.run([str(PYTHON), str(JOB)], input=json.dumps(job), capture_output=True,
                          text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        causes = [line for line in done.stderr.splitlines()
                  if line.strip() and not line.lstrip().startswith(("at ", "... "))]
        tail = "\n".join(causes[-8:])
        raise RuntimeError(f"Flink job failed (exit {done.returncode}):\n{tail}")
    result = json.loads(lines[-1])
    return result["runs_s"], result["net_runtime_s"]


def read_output(out: Path, columns: Sequence[str]) -> pd.DataFrame:
    """The header-less CSV part files under `out` as one frame with
    `columns`; integers as int64, other numbers as float64."""
    parts = [pd.read_csv(f, header=None, names=list(columns))
             for f in sorted(out.rglob("*")) if f.is_file() and not f.name.startswith(".")
             and f.stat().st_size > 0]
    df = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns))
    for c in df.columns:
        if pd.api.types.is_integer_dtype(df[c]):
            df[c] = df[c].astype("int64")
        elif pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype("float64")
    return df


def window_engine(q: WindowQuery, data_dir: Path, parallelism: int = 2) -> suite.Engine:
    """Flink computing `q` over ``<data_dir>/csv/events.csv``
    (`benchmarks.data.events`); output columns `benchmarks.query.OUTPUT`."""
    return flink_engine("flink", {"ev": (data_dir / "csv" / "events.csv", flink_sql.EVENTS)},
                        flink_sql.window_sql(q), OUTPUT, parallelism)


def nexmark_engine(query: str, nexmark_dir: Path, parallelism: int = 2) -> suite.Engine:
    """Flink computing Nexmark `query` (q5, q7, q8 or q11) over
    ``<nexmark_dir>/csv/{person,auction,bid}.csv``; output columns as in
    `flink_sql.NEXMARK_QUERIES`. Raises ValueError for another query."""
    if query not in flink_sql.NEXMARK_QUERIES:
        raise ValueError(f"Nexmark query {query!r}: choose from {', '.join(flink_sql.NEXMARK_QUERIES)}")
    sql, names, columns = flink_sql.NEXMARK_QUERIES[query]
    tables = {t: (nexmark_dir / "csv" / f"{t}.csv", flink_sql.NEXMARK[t]) for t in names}
    return flink_engine("flink", tables, sql, columns, parallelism)
