"""Crash recovery: kill `wid run` with SIGKILL at random moments, restart it,
and check that the sink ends up exactly as after an uninterrupted run.

    python -m benchmarks.crash_recovery [--runs 50] [--kills 5] [--seed 1] [--late-data drop|dlq|reopen]

Each run lands a fresh stream (JSON files read one per micro-batch, some bad
rows among them) and a streaming pipeline writing SQLite. The uninterrupted
reference runs first in its own directory. Then `wid run` is started,
killed (the whole process group, JVM included) after a random 3 to 12
seconds, and restarted, `--kills` times, and finally run to the end. The
windows and dead-letter tables must equal the reference's, row for row.
Prints the tally: runs that matched, duplicates found, rows missing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing, suppress
from pathlib import Path

PIPELINE = """
name = "{name}"

[source]
format = "json"
path = "land"
stream = true
schema = "k STRING, ts LONG, v DOUBLE"
options = {{ maxFilesPerTrigger = "1" }}

[transform.window]
{extent}
late_mode = "consistent"
event_time_column = "ts"
event_time_unit = "ms"
group_by = ["k"]
lateness_ms = 5000
max_groups_per_window = 1000

[[transform.window.aggregations]]
agg = "count"
as = "n"

[[transform.window.aggregations]]
agg = "sum"
column = "v"
as = "total"

[spark]
master = "local[2]"
conf = {{ "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }}

[target]
kind = "sqlite"
path = "out.sqlite"
table = "windows"

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"
"""


HOPPING = 'kind = "hopping"\nduration_ms = 30000\nhop_ms = 10000'


def pipeline_toml(extent: str = HOPPING, name: str = "crash") -> str:
    """The pipeline: a JSON landing directory `land`, the window `extent`
    (kind and sizes) over ``ts`` in ms per ``k`` with count and sum, SQLite
    `out.sqlite` for windows and dead letters."""
    return PIPELINE.format(name=name, extent=extent)


def make_stream(root: Path, files: int, rows_per_file: int, rng: random.Random, extent: str = HOPPING) -> None:
    """The pipeline file (window `extent`) and a landing directory of
    `files` JSON files with disorder, a few late rows and a few malformed
    ones.

    A restart may group two files into one micro-batch: Spark's file source
    logs the file it picks before the query logs its batch, and after a kill
    between the two, the next batch takes that file and a new one. So late
    rows are two minutes behind, late whichever way the files (28 s each)
    are grouped, and none is in the first two files: grouped into the first
    micro-batch, they have no watermark before them to be late against
    (a rolling run killed there emitted three rows its reference dropped);
    under ``reopen`` others are 20 s behind, reopening their windows or
    arriving in time, which ends in the same window either way."""
    land = root / "land"
    land.mkdir(parents=True)
    (root / "pipeline.toml").write_text(pipeline_toml(extent))
    t0 = 1_700_000_000_000
    reopen = 'late_data = "reopen"' in extent
    for f in range(files):
        lines = []
        for i in range(rows_per_file):
            ts = t0 + (f * rows_per_file + i) * 700 + rng.randrange(-3_000, 1)
            draw = rng.random()
            if draw < 0.03 and f >= 2:
                ts -= 120_000  # late beyond lateness (and beyond allowed_lateness_ms)
            elif reopen and draw < 0.06:
                ts -= 20_000  # behind the watermark, within allowed_lateness_ms
            lines.append(json.dumps({"k": rng.choice("abcd"), "ts": ts, "v": float(rng.randrange(100))}))
        if rng.random() < 0.3:
            lines.append('{"k": "a", "ts": "broken", "v": 1.0}')
        path = land / f"part-{f:04d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_000_000 + f, 1_000_000 + f))


ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable}


def command(root: Path) -> list[str]:
    return [sys.executable, "-m", "wid.cli", "run", "--quiet", str(root / "pipeline.toml")]


def finish(root: Path) -> None:
    """Run the pipeline to the end; raise with its output if it fails."""
    done = subprocess.run(command(root), cwd=root, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        # the cause comes first: Spark's query plan follows it and fills any tail of stderr
        (root / "finish.log").write_text(done.stdout + done.stderr)
        lines = done.stderr.splitlines()
        causes = [ln[:300] for ln in lines if any(w in ln.lower() for w in ("exception", "error", "caused"))]
        raise RuntimeError(f"wid run failed in {root} (its whole output is in finish.log):\n"
                           + "\n".join(causes[:40] or lines[-40:]) + f"\nstdout:\n{done.stdout[-1000:]}")


def start(root: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command(root), cwd=root, env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def kill(proc: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def tables(root: Path) -> dict[str, list[tuple[object, ...]]]:
    """Both tables' rows, with the run's own directory cut out of file names
    and without the dead letters' batch id: after a restart that grouped two
    files into one micro-batch (see `make_stream`), Spark numbers every later
    micro-batch one lower than an uninterrupted run does."""
    def local(v: object) -> object:
        return v.replace(str(root.resolve()), "") if isinstance(v, str) else v
    with closing(sqlite3.connect(root / "out.sqlite")) as con:
        found = {}
        for t in ("windows", "dead_letter"):
            cur = con.execute(f'SELECT * FROM "{t}"')
            names = [d[0] for d in cur.description]
            rows = (tuple(local(v) for n, v in zip(names, r, strict=True) if n != "batch_id") for r in cur)
            found[t] = sorted(rows, key=repr)
        return found


Maker = Callable[[Path, int, int, random.Random, str], None]


def one_run(base: Path, seed: int, kills: int, files: int = 12, rows_per_file: int = 40,
            extent: str = HOPPING, make: Maker = make_stream) -> dict[str, int]:
    """Returns counts: kills done, duplicate and missing rows against the
    reference (window `extent`: kind, sizes and late-data policy). `make`
    writes the pipeline and its stream (`make_stream`'s arguments); the
    pipeline writes tables ``windows`` and ``dead_letter`` of ``out.sqlite``."""
    rng = random.Random(seed)
    ref, crash = base / f"ref-{seed}", base / f"crash-{seed}"
    make(ref, files, rows_per_file, random.Random(seed), extent)
    shutil.copytree(ref, crash)
    finish(ref)
    done = 0
    for _ in range(kills):
        proc = start(crash)
        time.sleep(rng.uniform(3.0, 12.0))
        if proc.poll() is not None:
            break  # finished before the kill: nothing left to interrupt
        kill(proc)
        done += 1
    finish(crash)
    want, got = tables(ref), tables(crash)
    dup = sum(max(0, got[t].count(r) - want[t].count(r)) for t in want for r in set(got[t]))
    missing = sum(max(0, want[t].count(r) - got[t].count(r)) for t in want for r in set(want[t]))
    extra = sum(len(got[t]) for t in got) - sum(len(want[t]) for t in want)
    return {"kills": done, "duplicates": dup, "missing": missing, "extra": max(0, extra)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--kills", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", default="/tmp/wid-crash")
    parser.add_argument("--late-data", choices=["drop", "dlq", "reopen"], default="drop",
                        help="dlq and reopen run on the WID operator")
    args = parser.parse_args()
    extent = HOPPING + {"drop": "", "dlq": '\nlate_data = "dlq"',
                        "reopen": '\nlate_data = "reopen"\nallowed_lateness_ms = 30000'}[args.late_data]
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
    tally = {"runs": 0, "matched": 0, "kills": 0, "duplicates": 0, "missing": 0}
    for run in range(args.runs):
        result = one_run(base, args.seed + run, args.kills, extent=extent)
        tally["runs"] += 1
        tally["kills"] += result["kills"]
        tally["duplicates"] += result["duplicates"]
        tally["missing"] += result["missing"]
        tally["matched"] += int(result["duplicates"] == result["missing"] == 0)
        print(f"run {run + 1}: {result}", flush=True)
    print(f"tally: {tally}")


if __name__ == "__main__":
    main()
