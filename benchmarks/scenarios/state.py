"""State at scale: a steady micro-batch's time and checkpoint bytes, wid
beside Spark's own streaming query, at 10k, 1M and 10M keys held, for
tumbling 1 day, hopping 60 min / 1 min and session (gap 1 day) windows;
and wid alone (Spark has no streaming form of them) at 10k and 1M keys
for count, rolling and landmark windows (`benchmarks.state_scale`, one
process per run).

    python -m benchmarks run --only state [--quick]

Targets (ratios of runs in one process each, side by side): a steady
micro-batch, wid / Spark <= 1.0 for tumbling and session; checkpoint bytes
per steady micro-batch, wid / Spark <= 1.2; the growth of the steady
micro-batch time from the fewest to the most keys no more than Spark's;
hopping 60/1 >= 10x Spark's own; for count, rolling and landmark windows,
checkpoint bytes per steady micro-batch flat from 10k to 1M keys held
(the ratio of the two near 1), each steady file touching the same 10,000
keys whatever the keys held, so that the rows changed are the same.
"""

from __future__ import annotations

from typing import Any

KEYS, QUICK_KEYS = (10_000, 1_000_000, 10_000_000), (10_000, 100_000)
WID_ONLY_KEYS = (10_000, 1_000_000)
TOUCHED = 10_000  # distinct keys each steady file of the wid-only kinds holds (50,000 rows: 5 a key)
KINDS = ("tumbling", "hopping", "session")  # beside Spark's own query
WID_ONLY = ("count", "rolling", "landmark")  # Spark's streaming aggregation has none of them
TITLE = "state: steady micro-batch time and checkpoint bytes at 10k, 1M and 10M keys held, wid and Spark"


RUN_S = 1800  # a run not done in half an hour is recorded as not finished (Spark's hopping 60/1 at 1M keys)


def one(engine: str, kind: str, keys: int, files: int, *more: str) -> dict[str, Any]:
    """One run of `benchmarks.state_scale` in its own process (its figures,
    or ``finished: False`` past `RUN_S`); `more`: its further arguments."""
    from benchmarks.harness import run_module

    found = run_module("benchmarks.state_scale", ["--engine", engine, "--kind", kind, "--keys", str(keys),
                                                  "--files", str(files), *more], RUN_S)
    return {"engine": engine, "kind": kind, "keys": keys, "finished": False} if found is None else found


def line(kind: str, keys: int, spark: dict[str, Any], mine: dict[str, Any]) -> str:
    if spark.get("finished") is False or mine.get("finished") is False:
        late = ", ".join(r["engine"] for r in (spark, mine) if r.get("finished") is False)
        return f"  {kind:8s} {keys:>10,} keys: not finished in {RUN_S} s: {late}"
    t, b = mine["steady_batch_s"] / spark["steady_batch_s"], \
        mine["checkpoint_bytes_per_batch"] / spark["checkpoint_bytes_per_batch"]
    return (f"  {kind:8s} {keys:>10,} keys: steady batch wid {mine['steady_batch_s']:.2f} s, Spark "
            f"{spark['steady_batch_s']:.2f} s ({t:.2f}x); checkpoint per batch wid "
            f"{mine['checkpoint_bytes_per_batch'] / 1e6:.2f} MB, Spark {spark['checkpoint_bytes_per_batch'] / 1e6:.2f} "
            f"MB ({b:.2f}x)")


def flat(kind: str, runs: list[dict[str, Any]]) -> str:
    """wid's checkpoint bytes per steady micro-batch at each key count, and
    the most keys' over the fewest's."""
    each = ", ".join(f"{r['keys']:,} keys {r['checkpoint_bytes_per_batch'] / 1e6:.3f} MB "
                     f"(steady batch {r['steady_batch_s']:.2f} s)" for r in runs)
    growth = runs[-1]["checkpoint_bytes_per_batch"] / runs[0]["checkpoint_bytes_per_batch"]
    return f"  {kind:8s} checkpoint per batch: {each}; {runs[-1]['keys']:,} / {runs[0]['keys']:,} keys: {growth:.2f}x"


def run(ctx: Any) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    for kind in WID_ONLY:  # each file touches TOUCHED keys, whatever the keys held: the rows changed stay the same
        mine = [one("wid", kind, k, 8, "--touched", str(TOUCHED)) for k in (QUICK_KEYS if ctx.quick else WID_ONLY_KEYS)]
        runs += mine
        print(flat(kind, mine), flush=True)
    for kind in KINDS:
        for k in QUICK_KEYS if ctx.quick else KEYS:
            spark, mine = one("spark", kind, k, 8), one("wid", kind, k, 8)
            runs += [spark, mine]
            print(line(kind, k, spark, mine), flush=True)
    return [{"scenario": "state", "title": TITLE, "runs": runs}]
