"""Crash recovery, many times: `wid run` killed with SIGKILL at a random
point of its checkpoint (after the commit of micro-batch k, or inside
micro-batch k, for k from 1), restarted and run to the end; its sinks are
compared with the streaming oracle's windows and dead letters for the
landed files (`tests.crash_harness`).

    python -m benchmarks.crash_recovery [--runs 50] [--seed 1] [--dir /tmp/wid-crash]
    python -m benchmarks.crash_recovery --sink kafka [--runs 30]

Each run draws its window: hopping windows under ``drop``, ``dlq`` or
``reopen``, or the WID operator's count or rolling windows. Prints each run
and the tally: runs whose sinks equal the oracle's, kills that landed after
a committed micro-batch, and kills that landed where they were aimed.
Target: every run equal, at least 40 of 50 kills after a commit.

With ``--sink kafka`` the sinks are Kafka topics written with ``delivery =
"exactly-once"`` on a local broker it starts (`tests.kafka_crash`): each
run draws its window (tumbling under ``dlq``, hopping under ``reopen``,
tumbling with ``emit = "on_update"``), a kill inside a writer's open
transaction, inside a micro-batch or after a commit of micro-batch k, and,
in two runs of three, a task of a later micro-batch failing once and
retried. Each run's line says where its kill landed, whether the
``read_committed`` views equal the oracle's (windows, dead letters) and how
many aborted copies a ``read_uncommitted`` consumer sees. Target: every run
exact.
"""

from __future__ import annotations

import argparse
import random
import shutil
from collections import Counter
from pathlib import Path

from tests.crash_harness import KillAt, crash_run, tally
from tests.fixtures import HOPPING, POLICIES

EXTENTS = {**{f"hopping {p}": HOPPING + extra for p, extra in POLICIES.items()},
           "count": 'kind = "count"\nsize_rows = 20\nhop_rows = 10', "rolling": 'kind = "rolling"\nduration_ms = 30000'}
FILES = 8


def kafka_campaign(runs: int, seed: int, base: Path) -> None:
    """The ``--sink kafka`` campaign (module docstring)."""
    from tests.kafka_check import Kafka
    from tests.kafka_crash import EXTENTS as KAFKA_EXTENTS
    from tests.kafka_crash import Kill
    from tests.kafka_crash import crash_run as kafka_crash_run
    from tools import kafka_broker

    broker = kafka_broker.start(base / "broker")
    try:
        tally: Counter[str] = Counter()
        for run in range(runs):
            rng = random.Random(seed + run)
            name = rng.choice(sorted(KAFKA_EXTENTS))
            kill = Kill(rng.choice(["in-transaction", "in-batch", "after-commit"]), rng.randrange(1, 5))
            fail = rng.randrange(kill.batch + 1, 7) if rng.random() < 2 / 3 else None
            r = kafka_crash_run(Kafka(broker), base / f"run-{run}", seed + run, [kill], fail, KAFKA_EXTENTS[name])
            exact = r["windows_equal"] and r["dead_equal"]
            tally.update({"runs": 1, "exact": exact, "landed as aimed": r["landed"] == [kill.phase],
                          "task failures": r["task_failed"], "aborted copies seen": r["aborted_copies"] > 0})
            failure = "no task failure" if fail is None else \
                f"task failure in micro-batch {fail} {'retried' if r['task_failed'] else '(not reached)'}"
            print(f"run {run + 1}: {name}, aimed {kill.phase} {kill.batch}, landed {r['landed'][0]}; {failure}; windows "
                  f"{r['windows']} (oracle {r['oracle_windows']}) equal {r['windows_equal']}, dead letters {r['dead']} "
                  f"equal {r['dead_equal']}; read_uncommitted sees {r['aborted_copies']} aborted copies", flush=True)
        print(f"tally: {dict(tally)}")
    finally:
        kafka_broker.stop(broker)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", default="/tmp/wid-crash")
    parser.add_argument("--sink", choices=("sqlite", "kafka"), default="sqlite")
    args = parser.parse_args()
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
    if args.sink == "kafka":
        kafka_campaign(args.runs, args.seed, base)
        return
    results = []
    for run in range(args.runs):
        rng = random.Random(args.seed + run)
        name = rng.choice(sorted(EXTENTS))
        point = KillAt(rng.choice(["after-commit", "in-batch"]), rng.randrange(1, FILES - 1))
        result = crash_run(base / f"run-{run}", args.seed + run, [point], files=FILES, extent=EXTENTS[name])
        results.append(result)
        print(f"run {run + 1}: {name}, aimed {point.phase} {point.batch}: landed {result['landed']}, "
              f"windows equal {result['windows_equal']}, dead letters equal {result['dead_equal']}", flush=True)
    print(f"tally: {dict(tally(results))}")


if __name__ == "__main__":
    main()
