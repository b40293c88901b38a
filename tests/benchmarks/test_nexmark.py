"""Nexmark queries: wid's versions (and Spark's native ones) equal DuckDB's
on a small stream. 20,000 events at 200 events/s span 100 s of event
time: ten tumbling windows, 54 hopping ones, auctions of about 8 s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from benchmarks import data
from benchmarks.nexmark import QUERIES, generator, queries_duckdb, queries_spark, queries_wid
from benchmarks.suite import disagreement

EVENTS, RATE_PER_S = 20_000, 200


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nexmark")
    for name, table in generator.generate(EVENTS, seed=5, rate_per_s=RATE_PER_S).items():
        data.write(root, name, table)
    return root


def duckdb_output(where: Path, query: str) -> pd.DataFrame:
    return queries_duckdb.connect(where).sql(queries_duckdb.SQL[query]).df()


@pytest.mark.parametrize("query", list(QUERIES))
def test_wid_equals_duckdb(spark: Any, where: Path, query: str) -> None:
    expected = duckdb_output(where, query)
    assert len(expected) > 0
    got = queries_wid.QUERY[query](spark, where).toPandas()
    assert list(got.columns) == list(QUERIES[query].columns)
    assert disagreement(expected, got, QUERIES[query].keys) is None


@pytest.mark.parametrize("query", list(QUERIES))
def test_spark_native_equals_duckdb(spark: Any, where: Path, query: str) -> None:
    got = queries_spark.QUERY[query](spark, where).toPandas()
    assert disagreement(duckdb_output(where, query), got, QUERIES[query].keys) is None


@pytest.mark.parametrize("query", list(queries_spark.CHECKED))
def test_spark_with_wid_s_checks_equals_duckdb(spark: Any, where: Path, query: str) -> None:
    got = queries_spark.CHECKED[query](spark, where).toPandas()
    assert disagreement(duckdb_output(where, query), got, QUERIES[query].keys) is None


@pytest.mark.parametrize(("query", "variant"), [(q, v) for q, vs in queries_wid.VARIANTS.items() for v in vs])
def test_wid_variants_equal_duckdb(spark: Any, where: Path, query: str, variant: str) -> None:
    got = queries_wid.VARIANTS[query][variant](spark, where).toPandas()
    assert disagreement(duckdb_output(where, query), got, QUERIES[query].keys) is None


def test_the_stream_exercises_every_query(where: Path) -> None:
    """Enough windows and rows that agreement means something: several
    windows per query, and sessions and closed auctions that repeat."""
    q5, q6, q7 = (duckdb_output(where, q) for q in ("q5", "q6", "q7"))
    assert q5["window_start_ms"].nunique() >= 50
    assert q7["date_time_ms"].floordiv(10_000).nunique() >= 9
    assert q6.groupby("seller").size().max() > 10  # the 10-auction window slides
    q11 = duckdb_output(where, "q11")
    assert q11.groupby("bidder").size().max() > 1  # a bidder with several sessions
    assert len(duckdb_output(where, "q8")["window_start_ms"].unique()) >= 9
