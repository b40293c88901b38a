"""Run a WindowJoin through Spark and through the oracle, and compare."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame

from tests.spark.compare import same_value
from wid.semantics.oracle import OracleResult
from wid.semantics.ranks import sql_sort_key
from wid.semantics.window_join import window_join
from wid.spark.compile import StageResult, compile_join
from wid.spec import Aggregation
from wid.spec.join import WindowJoin, metric_alias


def frame(spark: Any, rows: list[dict[str, Any]], schema: str) -> DataFrame:
    return spark.createDataFrame([tuple(r.values()) for r in rows], schema)


def _key(value: Any) -> Any:
    return tuple(sql_sort_key(v) for v in value) if isinstance(value, list) else sql_sort_key(value)


def assert_same_join(got: list[dict[str, Any]], want: list[dict[str, Any]], join: WindowJoin) -> None:
    """Multisets of rows: exact on every column but the aggregate metrics,
    which compare within `tests.spark.compare`'s tolerance."""
    assert len(got) == len(want), f"{len(got)} rows from Spark, {len(want)} from the oracle"
    if not want:
        return
    assert list(got[0]) == list(want[0]), f"columns {list(got[0])} != {list(want[0])}"
    aggs = {metric_alias(m): m for m in join.metrics if isinstance(m, Aggregation)}
    exact = [c for c in want[0] if c not in aggs]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(_key(r[c]) for c in exact) + tuple(_key(r[a]) for a in aggs)

    for g, w in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        assert [g[c] for c in exact] == [w[c] for c in exact], f"rows differ:\n spark  {g}\n oracle {w}"
        for alias, m in aggs.items():
            assert same_value(m.agg, None, g[alias], w[alias]), (
                f"{m.agg}({m.column}, {m.column2}) as {alias}: spark {g[alias]!r} != oracle {w[alias]!r}\n in {w}")


def check_join(spark: Any, left: list[dict[str, Any]], right: list[dict[str, Any]], schemas: tuple[str, str],
               join: WindowJoin) -> tuple[StageResult, OracleResult]:
    """Both engines on the same rows: equal outputs, equal dead letters per
    side, and the accounting identity rows_in = rejected + joined."""
    compiled = compile_join(frame(spark, left, schemas[0]), frame(spark, right, schemas[1]), join)
    result = compiled.result
    columns = [c.split()[0] for c in schemas[0].split(",")]
    oracle = window_join(left, right, join, left_columns=columns)
    assert_same_join([r.asDict() for r in result.output.collect()], oracle.rows, join)
    dead = sorted((r.source, r.reason) for r in result.dead_letter.select("source", "reason").collect())
    assert dead == sorted((d.source, d.reason) for d in oracle.dead_letter)
    counts = {r[0]: r[1] for r in compiled.prepared.groupBy("_wid_reason").count().collect()}
    assert sum(counts.values()) == oracle.rows_in == len(left) + len(right)
    assert counts.get(None, 0) == oracle.rows_aggregated
    return result, oracle
