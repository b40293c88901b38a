"""Hot keys: how the WID operator's shards share a skewed stream of
50,000-row micro-batches, beside Spark's own query (`benchmarks.skew_scale`,
one process per run): keys from Zipf(1.1) over 1M keys, and one key at 30 %
of the rows; wid at 8, 32 and 128 shards (``spark.wid.operator.shards``)
on ``local[2]``, with rows combined before the shuffle and without
(``spark.wid.operator.combine``).

    python -m benchmarks run --only skew [--quick]

Targets (issue 54): the largest shard's rows and call time at most 2x the
mean at every shard count; the steady micro-batch at most 1.0x Spark's own
query.
"""

from __future__ import annotations

from typing import Any

from benchmarks.skew_scale import DISTRIBUTIONS

TITLE = "skew: Zipf(1.1) and one key at 30 %, wid's shards beside Spark's own query"
SHARDS, QUICK_SHARDS = (8, 32, 128), (8,)
RUN_S = 1800


def one(engine: str, how: str, shards: int, rows: int, combine: bool = True) -> dict[str, Any]:
    """One run of `benchmarks.skew_scale` in its own process (``finished: False`` past `RUN_S`)."""
    from benchmarks.harness import run_module

    found = run_module("benchmarks.skew_scale", ["--engine", engine, "--keys", how, "--shards", str(shards),
                                                 "--rows", str(rows), "--combine", "on" if combine else "off"], RUN_S)
    return {"engine": engine, "keys": how, "shards": shards, "combine": combine, "finished": False} \
        if found is None else found


def line(spark: dict[str, Any], mine: dict[str, Any]) -> str:
    combined = "combined" if mine.get("combine", True) else "rows    "
    if spark.get("finished") is False or mine.get("finished") is False:
        return f"  {mine['keys']:4s} {mine['shards']:>4} shards, {combined}: not finished in {RUN_S} s"
    rows, received, took = mine["shard_rows"], mine["shard_received"], mine["shard_ms"]
    return (f"  {mine['keys']:4s} {mine['shards']:>4} shards, {combined}: steady batch wid "
            f"{mine['steady_batch_s']:.2f} s, Spark {spark['steady_batch_s']:.2f} s "
            f"({mine['steady_batch_s'] / spark['steady_batch_s']:.2f}x); largest shard / mean: rows "
            f"{rows['largest_over_mean']:.2f}x, received {received['largest_over_mean']:.2f}x, call time "
            f"{took['largest_over_mean']:.2f}x ({mine['shard_ms_after_first']['largest_over_mean']:.2f}x without "
            f"a task's first call: {mine['first_call_ms']:.1f} ms against {mine['other_call_ms']:.1f} ms)")


def run(ctx: Any) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    rows = 10_000 if ctx.quick else 50_000
    for how in DISTRIBUTIONS:
        spark = one("spark", how, 0, rows)
        runs.append(spark)
        for shards in QUICK_SHARDS if ctx.quick else SHARDS:
            for combine in (True, False):
                mine = one("wid", how, shards, rows, combine)
                runs.append(mine)
                print(line(spark, mine), flush=True)
    return [{"scenario": "skew", "title": TITLE, "runs": runs}]
