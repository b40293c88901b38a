"""Scaling: throughput at 1x, 2x and 4x the data, on ``local[1]`` and
``local[2]``.

The query is a hopping window (10 min every 1 min, 1,000 keys) run by wid
and by Spark's ``window()``. A Spark session's core count is fixed when its
JVM starts, so each master runs in its own process
(``python -m benchmarks.scenarios.scaling --master local[1] ...``), which
prints its records as JSON; the scenario collects them. How a cluster
changes this is planned on paper in ``benchmarks/HISTORY.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks import data
from benchmarks.peers.all_peers import window_engines
from benchmarks.query import KEYS, WindowQuery
from benchmarks.suite import Scenario, run_scenario

TITLE = "scaling: 1x, 2x, 4x the data on local[1] and local[2]"
QUERY = WindowQuery("hopping", 600_000, 60_000)
MASTERS = ("local[1]", "local[2]")


def measure(spark: Any, master: str, base_rows: int, repeats: int) -> list[dict[str, Any]]:
    """One record per data size, on the session `spark` of `master`."""
    records = []
    for factor in (1, 2, 4):
        rows = base_rows * factor
        where = data.events(rows, 1000)
        s = Scenario(f"scaling_{master.replace('[', '').replace(']', '')}_{factor}x", f"{QUERY.label}, "
                     f"{rows:,} rows, 1,000 keys, {master}", rows, KEYS,
                     window_engines(spark, QUERY, where, ("wid", "spark window()")),
                     {"master": master, "factor": factor})
        records.append(run_scenario(s, repeats))
    return records


def run(ctx: Any) -> list[dict[str, Any]]:
    base = 100_000 if ctx.quick else 1_000_000
    records: list[dict[str, Any]] = []
    for master in MASTERS:
        out = subprocess.run([sys.executable, "-m", "benchmarks.scenarios.scaling", "--master", master,
                              "--rows", str(base), "--repeats", str(ctx.repeats)],
                             stdout=subprocess.PIPE, text=True, check=True)
        *table, last = out.stdout.strip().splitlines()
        print("\n".join(table))
        records += json.loads(last)
    return records


def plot(records: list[dict[str, Any]], out: Path) -> list[Path]:
    """wid's and window()'s throughput against the data factor, per master."""
    from benchmarks.plots import pyplot, save

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for master in MASTERS:
        mine = [r for r in records if r["params"]["master"] == master]
        for name in ("wid", "spark window()"):
            ys = [next(e["rows_per_s"] for e in r["engines"] if e["engine"] == name) for r in mine]
            ax.plot([r["params"]["factor"] for r in mine], ys, marker="o", label=f"{name}, {master}")
    ax.set(xlabel="data (x base)", ylabel="input rows per second (median)", xscale="log", yscale="log",
           title=f"scaling: {QUERY.label}, 1,000 keys")
    ax.set_xticks([1, 2, 4], ["1x", "2x", "4x"])
    ax.legend()
    return [save(fig, out / "scaling.png")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one master's scaling records, printed as JSON")
    parser.add_argument("--master", required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.harness import session

    found = measure(session(args.master), args.master, args.rows, args.repeats)
    print(json.dumps(found, default=str))
