"""State at scale: a steady micro-batch's time and checkpoint bytes, wid
beside Spark's own streaming query, at 10k, 1M and 10M keys held, for
tumbling 1 day, hopping 60 min / 1 min and session (gap 1 day) windows
(`benchmarks.state_scale`, one process per run).

    python -m benchmarks run --only state [--quick]

Targets (ratios of runs in one process each, side by side): a steady
micro-batch, wid / Spark <= 1.0 for tumbling and session; checkpoint bytes
per steady micro-batch, wid / Spark <= 1.2; the growth of the steady
micro-batch time from the fewest to the most keys no more than Spark's;
hopping 60/1 >= 10x Spark's own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

KEYS, QUICK_KEYS = (10_000, 1_000_000, 10_000_000), (10_000, 100_000)
KINDS = ("tumbling", "hopping", "session")
TITLE = "state: steady micro-batch time and checkpoint bytes at 10k, 1M and 10M keys held, wid and Spark"


def one(engine: str, kind: str, keys: int, files: int) -> dict[str, Any]:
    """One run of `benchmarks.state_scale` in its own process."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.state_scale", "--engine", engine, "--kind", kind,
                           "--keys", str(keys), "--files", str(files)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"state_scale {engine} {kind} {keys} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def line(kind: str, keys: int, spark: dict[str, Any], mine: dict[str, Any]) -> str:
    t, b = mine["steady_batch_s"] / spark["steady_batch_s"], \
        mine["checkpoint_bytes_per_batch"] / spark["checkpoint_bytes_per_batch"]
    return (f"  {kind:8s} {keys:>10,} keys: steady batch wid {mine['steady_batch_s']:.2f} s, Spark "
            f"{spark['steady_batch_s']:.2f} s ({t:.2f}x); checkpoint per batch wid "
            f"{mine['checkpoint_bytes_per_batch'] / 1e6:.2f} MB, Spark {spark['checkpoint_bytes_per_batch'] / 1e6:.2f} "
            f"MB ({b:.2f}x)")


def run(ctx: Any) -> list[dict[str, Any]]:
    keys = QUICK_KEYS if ctx.quick else KEYS
    runs: list[dict[str, Any]] = []
    for kind in KINDS:
        for k in keys:
            spark, mine = one("spark", kind, k, 8), one("wid", kind, k, 8)
            runs += [spark, mine]
            print(line(kind, k, spark, mine), flush=True)
    return [{"scenario": "state", "title": TITLE, "runs": runs}]
