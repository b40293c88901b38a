"""The columns a stage names and a pipeline's declared inputs, checked
without Spark (`wid.spec.inputs`): the schema's columns as Spark itself
reads the same DDL, and the same columns the Spark plans check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wid.errors import ConfigError
from wid.spec.inputs import check_inputs, declared_columns
from wid.spec.pipeline import SourceSpec
from wid.spec.toml_io import loads_pipeline

SCHEMAS = ["shop STRING, ts TIMESTAMP, amount DOUBLE",
           "a INT NOT NULL, `b c` STRUCT<x: INT, y: ARRAY<STRING>>, d DECIMAL(10,2) COMMENT 'd', e MAP<STRING,INT>",
           "ts TIMESTAMP_NTZ, x BINARY, y DATE, z FLOAT, `select` BIGINT"]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_a_declared_schema_has_the_columns_spark_reads_from_it(spark: Any, schema: str) -> None:
    source = SourceSpec(format="csv", path="x.csv", schema=schema)
    assert declared_columns(source) == tuple(spark.createDataFrame([], schema).columns)


def test_a_kafka_source_adds_its_message_columns_and_unknown_columns_are_left_to_spark() -> None:
    kafka = SourceSpec(format="kafka", topic="t", bootstrap_servers="127.0.0.1:9092", schema="k STRING")
    assert declared_columns(kafka) == ("k", "_event_ts", "_topic", "_partition", "_offset", "_key", "_value")
    assert declared_columns(SourceSpec(format="csv", path="x.csv")) is None  # inferred by Spark
    assert declared_columns(SourceSpec(format="python", object="m:rows", schema="k STRING")) is None


PIPELINE = """
name = "p"

[source]
format = "csv"
path = "rows.csv"
schema = "k STRING, ts TIMESTAMP, v DOUBLE"
{sql}
[transform.window]
kind = "tumbling"
duration = "1 minute"
event_time_column = "ts"
group_by = ["{key}"]

[[transform.window.aggregations]]
agg = "sum"
column = "{value}"
as = "total"
"""


def test_a_missing_file_and_a_column_the_schema_lacks_are_named(tmp_path: Path) -> None:
    def check(key: str = "k", value: str = "v", sql: str = "") -> None:
        check_inputs(loads_pipeline(PIPELINE.format(key=key, value=value, sql=sql), base_dir=str(tmp_path)))

    with pytest.raises(ConfigError, match=r"^source\.path: no such file or directory: .*rows\.csv"):
        check()
    (tmp_path / "rows.csv").write_text("k,ts,v\n")
    check()
    with pytest.raises(ConfigError, match=r"^transform\.window\.group_by: column 'K' is not in the source's schema"):
        check(key="K")
    with pytest.raises(ConfigError, match=r"^transform\.window\.aggregations\[0\]\.column: column 'w' is not in"):
        check(value="w")
    check(key="K", sql='\n[transform]\nsql = "SELECT k AS K, ts, v FROM source"\n')  # a pre-stage: Spark checks


JOIN = """
name = "j"

[[source]]
name = "trades"
format = "json"
path = "trades"
stream = true
schema = "sym STRING, ts TIMESTAMP, qty BIGINT"

[[source]]
name = "quotes"
format = "json"
path = "quotes"
stream = true
schema = "sym STRING, ts TIMESTAMP, bid DOUBLE"

[join]
left = "trades"
right = "quotes"
window = [-2000, 0]
matching_column = "sym"
time_column = "ts"

[[join.metrics]]
agg = "avg"
column = "{column}"
as = "avg_bid"
"""


def test_a_window_join_s_columns_are_checked_against_each_side_s_schema() -> None:
    check_inputs(loads_pipeline(JOIN.format(column="bid")))  # streams: their landing directories are made
    with pytest.raises(ConfigError, match=r"^join\.metrics\[0\]\.column: column 'qty' is not in the right "
                                          r"source's schema \(its columns: sym, ts, bid\)"):
        check_inputs(loads_pipeline(JOIN.format(column="qty")))
