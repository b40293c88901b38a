"""`row_partial()` is `partial()` over a group of one row: the same fields,
the same types and the same values, for every mergeable aggregation."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

from wid.aggregates.spark import Inputs, spark_agg
from wid.spec import Aggregation
from wid.spec.catalog import AGGREGATIONS

MERGEABLE = [n for n, s in AGGREGATIONS.items() if not s.holistic and n != "count_distinct"]
ROWS = [(0, 1.5, 2, "a"), (1, None, 3, "b"), (2, 4.0, None, None), (3, None, None, "c"), (4, -0.5, -7, "d")]


def aggregation(name: str, column: str) -> Aggregation:
    two = 2 in AGGREGATIONS[name].columns
    return Aggregation(name, column, column2="w" if two else None, as_="x")


@pytest.mark.parametrize("name", MERGEABLE)
@pytest.mark.parametrize("column", ["v", "w"])
def test_row_partial_equals_partial_of_a_one_row_group(spark: Any, name: str, column: str) -> None:
    df = spark.createDataFrame(ROWS, "id long, v double, w int, s string")
    types = {f.name: f.dataType for f in df.schema.fields}
    agg = spark_agg(aggregation(name, column), Inputs(types=types, ts_us=F.col("id")))
    grouped = df.groupBy("id").agg(*[e.alias(k) for k, e in agg.partial().items()])
    rows = df.select("id", *[e.alias(k) for k, e in agg.row_partial().items()])
    assert [(f.name, f.dataType) for f in rows.schema.fields] == [(f.name, f.dataType) for f in grouped.schema.fields]
    assert sorted(rows.collect()) == sorted(grouped.collect())


def test_holistic_aggregations_have_no_row_form(spark: Any) -> None:
    agg = spark_agg(Aggregation("med", "v", as_="m"), Inputs(types={}, ts_us=F.col("id")))
    with pytest.raises(TypeError):
        agg.row_partial()
