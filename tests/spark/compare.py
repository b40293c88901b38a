"""Run a Window through Spark and through the oracle, and compare."""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import wid
from wid.semantics import evaluate
from wid.semantics.ranks import sql_sort_key
from wid.spec import Window

REL = 1e-7


def collect(df: DataFrame, window: Window) -> list[dict[str, Any]]:
    """Spark output rows as dicts, window bounds as epoch microseconds."""
    cols = [F.unix_micros(F.col(c)).alias(c) if c in window.output_prefix[:2] else F.col(c) for c in df.columns]
    return [r.asDict() for r in df.select(*cols).collect()]


def _exact_columns(window: Window, row: dict[str, Any]) -> list[str]:
    aliases = {a.as_ for a in window.aggregations}
    return [c for c in row if c not in aliases]


def same_value(agg_name: str, mode: str | None, got: Any, want: Any) -> bool:
    if agg_name == "count_distinct" and mode == "approximate" and want is not None:
        return got is not None and abs(got - want) <= max(1.0, 0.02 * want)
    if got is None or want is None:
        return got is None and want is None
    if isinstance(got, float) or isinstance(want, float):
        return math.isclose(got, want, rel_tol=REL, abs_tol=REL)
    return bool(got == want)


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]], window: Window) -> None:
    """Compare as multisets: exact on window, key and (rolling) input
    columns; within tolerance on aggregate values."""
    assert len(got) == len(want), f"{len(got)} rows from Spark, {len(want)} from the oracle"
    if not want:
        return
    exact = _exact_columns(window, want[0])
    assert list(got[0]) == list(want[0]), f"columns {list(got[0])} != {list(want[0])}"

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(sql_sort_key(r[c]) for c in exact)

    for g, w in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        assert key(g) == key(w), f"row keys differ:\n spark  {g}\n oracle {w}"
        for a in window.aggregations:
            assert same_value(a.agg, a.mode, g[a.as_], w[a.as_]), (
                f"{a.agg}({a.column}, {a.column2}) as {a.as_}: spark {g[a.as_]!r} != oracle {w[a.as_]!r}\n in {w}")


def check_against_oracle(spark: Any, rows: list[dict[str, Any]], schema: str, window: Window) -> Any:
    """Run both engines on `rows`; assert equal outputs and equal dead letters.
    Returns the WindowResult."""
    df = spark.createDataFrame([tuple(r.values()) for r in rows], schema) if rows else spark.createDataFrame([], schema)
    result = wid.window_result(df, window)
    oracle = evaluate(rows, window)
    assert_same(collect(result.output, window), oracle.rows, window)
    dead = sorted(r["reason"] for r in result.dead_letter.select("reason").collect())
    assert dead == sorted(d.reason for d in oracle.dead_letter)
    return result
