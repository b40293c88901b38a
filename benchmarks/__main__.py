"""The benchmark suite's one entry point.

    python -m benchmarks run [--quick] [--only NAME[,NAME]] [--repeats 3]
    python -m benchmarks list
    python -m benchmarks flink-setup

`run` runs every scenario module in `SCENARIOS` (or those named): each
generates its data once (`benchmarks.data`), measures every engine that
supports it (`benchmarks.suite`), prints medians and ratios to wid, and
writes ``benchmarks/results/<scenario>.json`` and its plots
``benchmarks/results/<scenario>.png``. `--quick` shrinks every scenario so
the whole suite finishes in under 10 minutes on 2 cores. Peers come from
the ``[bench]`` extra; PyFlink, whose pins (pyarrow < 21, py4j, cloudpickle)
clash with PySpark 4's, lives in its own virtual environment made by
`flink-setup` (see `benchmarks.peers.flink`). A peer that is not installed
is reported as not run, with the command that installs it.

A scenario module has ``TITLE`` and ``run(ctx: Context) -> list[dict]``
(its records, already printed), and may have ``plot(records, out: Path)``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from benchmarks.harness import machine, save

SCENARIOS = ("ematix", "experiment1", "sessions", "rolling", "streaming", "nexmark", "window_join", "disorder", "scaling",
             "kafka", "density", "overhead", "state", "skew")
RESULTS = Path(__file__).parent / "results"


@dataclass
class Context:
    """What every scenario gets: `quick` sizes, `repeats` timed runs per
    engine, the Spark session (made on first use) and the master it uses."""

    quick: bool
    repeats: int
    master: str = "local[2]"
    notes: list[str] = field(default_factory=list)

    @cached_property
    def spark(self) -> Any:
        from benchmarks.harness import session, warm_up

        spark = session(self.master)
        warm_up(spark, 200_000 if self.quick else 2_000_000)
        return spark


def run(names: list[str], ctx: Context) -> int:
    """Run scenario modules `names`; returns the count of records in which
    some engine disagreed with wid."""
    bad = 0
    for name in names:
        module = importlib.import_module(f"benchmarks.scenarios.{name}")
        started = time.perf_counter()
        records = module.run(ctx)
        for record in records:
            record["quick"], record["command"] = ctx.quick, " ".join(["python -m benchmarks", *sys.argv[1:]])
            save(record["scenario"], record)
            bad += any(e.get("agrees") is False for e in record.get("engines", []))
        if hasattr(module, "plot"):
            for path in module.plot(records, RESULTS):
                print(f"plot: {path}")
        print(f"{name}: {time.perf_counter() - started:.0f} s")
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the scenarios")
    r.add_argument("--quick", action="store_true", help="small sizes: the whole suite in under 10 minutes")
    r.add_argument("--only", default="", help=f"comma-separated scenarios, of {', '.join(SCENARIOS)}")
    r.add_argument("--repeats", type=int, default=3)
    r.add_argument("--master", default="local[2]")
    sub.add_parser("list", help="list the scenarios")
    sub.add_parser("flink-setup", help="make the PyFlink environment (benchmarks/.venv-flink)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for name in SCENARIOS:
            print(f"{name:12s} {importlib.import_module(f'benchmarks.scenarios.{name}').TITLE}")
        return 0
    if args.command == "flink-setup":
        from benchmarks.peers.flink import setup

        setup()
        return 0
    names = [n for n in args.only.split(",") if n] or list(SCENARIOS)
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}: choose from {', '.join(SCENARIOS)}")
    print(f"machine: {machine()}")
    bad = run(names, Context(args.quick, args.repeats, args.master))
    if bad:
        print(f"{bad} scenario(s) had an engine disagreeing with wid: see the tables above")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
