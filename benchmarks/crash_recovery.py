"""Crash recovery, many times: `wid run` killed with SIGKILL at a random
point of its checkpoint (after the commit of micro-batch k, or inside
micro-batch k, for k from 1), restarted and run to the end; its sinks are
compared with the streaming oracle's windows and dead letters for the
landed files (`tests.crash_harness`).

    python -m benchmarks.crash_recovery [--runs 50] [--seed 1] [--dir /tmp/wid-crash]

Each run draws its window: hopping windows under ``drop``, ``dlq`` or
``reopen``, or the WID operator's count or rolling windows. Prints each run
and the tally: runs whose sinks equal the oracle's, kills that landed after
a committed micro-batch, and kills that landed where they were aimed.
Target: every run equal, at least 40 of 50 kills after a commit.
"""

from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path

from tests.crash_harness import KillAt, crash_run, tally
from tests.fixtures import HOPPING, POLICIES

EXTENTS = {**{f"hopping {p}": HOPPING + extra for p, extra in POLICIES.items()},
           "count": 'kind = "count"\nsize_rows = 20\nhop_rows = 10', "rolling": 'kind = "rolling"\nduration_ms = 30000'}
FILES = 8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", default="/tmp/wid-crash")
    args = parser.parse_args()
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
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
