"""The SQL pre-stage on Spark (`wid.pipelines.read.sql_stage`): Spark's own
parser refuses a statement that is not one query before it runs, even when
the check at declaration is bypassed; a query's rows and columns are those
Spark gives for it alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wid.errors import ConfigError
from wid.pipelines.read import sql_stage

QUERIES = [
    "SELECT * FROM source",
    "SELECT v, k FROM source WHERE v > 1;",
    "SELECT k, v FROM source -- a trailing comment",
    "SELECT k, v FROM source; -- a comment after the semicolon",
    "WITH a AS (SELECT k, v * 2 AS w FROM source) SELECT * FROM a",
    "FROM source SELECT v, k",
    "FROM source |> WHERE v > 1 |> SELECT k",
    "VALUES (1, 'a'), (2, 'b')",
    "TABLE source",
    "(SELECT k FROM source) UNION ALL (SELECT k FROM other)",
    "SELECT k, v, v FROM source",  # a column twice: both kept, in order
    "SELECT k, count(*) FROM source GROUP BY k",
    "SELECT v FROM source ORDER BY v DESC LIMIT 2",
]


@pytest.fixture()
def frames(spark: Any) -> dict[str, Any]:
    rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    return {"source": spark.createDataFrame(rows, "k string, v int"),
            "other": spark.createDataFrame([("z", 9)], "k string, v int")}


@pytest.mark.parametrize("sql", QUERIES)
def test_a_query_gives_what_spark_gives_for_it_alone(spark: Any, frames: dict[str, Any], sql: str) -> None:
    got = sql_stage(spark, frames, sql, "transform.sql")
    alone = spark.sql(sql.split(";")[0])  # the reference: Spark's own run of the statement
    assert got.columns == alone.columns
    assert [tuple(r) for r in got.collect()] == [tuple(r) for r in alone.collect()]


def test_a_stream_stays_a_stream(spark: Any) -> None:
    rate = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    got = sql_stage(spark, {"source": rate}, "SELECT timestamp AS ts, value % 2 AS parity FROM source",
                    "transform.sql")
    assert got.isStreaming and got.columns == ["ts", "parity"]


def _refused(spark: Any, frames: dict[str, Any], sql: str, field: str = "join.left_sql") -> str:
    with pytest.raises(ConfigError) as err:
        sql_stage(spark, frames, sql, field)
    assert err.value.field == field and "must be a single query (SELECT or WITH ...)" in str(err.value)
    return str(err.value)


def test_spark_refuses_a_writing_statement_before_it_runs(spark: Any, frames: dict[str, Any],
                                                          tmp_path: Path) -> None:
    # The load-time check is bypassed: the stage is called with the statement itself.
    statement = "INSERT OVERWRITE DIRECTORY '{}' USING text SELECT 'w'"
    spark.sql(statement.format(tmp_path / "alone"))  # the reference: alone, Spark writes the directory
    assert (tmp_path / "alone").is_dir()
    _refused(spark, frames, statement.format(tmp_path / "staged"))
    assert not (tmp_path / "staged").exists()


def test_spark_refuses_commands_before_they_run(spark: Any, frames: dict[str, Any]) -> None:
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    _refused(spark, frames, "SET spark.sql.shuffle.partitions = 7")
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions
    _refused(spark, frames, "CREATE TEMPORARY VIEW wid_probe_view AS SELECT 1")
    assert not spark.catalog.tableExists("wid_probe_view")
    _refused(spark, frames, "CACHE TABLE source")
    assert not spark.catalog.isCached("source")
    _refused(spark, frames, "SELECT 1; SELECT 2")
    _refused(spark, frames, "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a")


def test_an_error_names_the_line_of_the_user_s_query(spark: Any, frames: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        sql_stage(spark, frames, "SELECT k,\n       nope\nFROM source", "transform.sql")
    assert err.value.field == "transform.sql" and "nope" in str(err.value) and "line 2" in str(err.value), err.value
    message = _refused(spark, frames, "SELECT k\nFROM source\nWHERE v >", "transform.sql")
    assert "at the end of the query" in message and "line 4" not in message, message


def test_a_pipeline_whose_check_was_bypassed_is_refused_before_it_writes(spark: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec built while the declaration check does not know the statement
    (as for syntax sqlglot cannot read): the run is refused at its SQL
    stage, and nothing is written."""
    import wid
    from wid.spec import Aggregation, Window
    from wid.spec import pipeline as pipeline_spec
    from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec

    (tmp_path / "data.csv").write_text("ts,k\n2024-01-01 00:00:10,a\n")
    monkeypatch.setattr(pipeline_spec, "check_query", lambda field, sql: None)
    spec = PipelineSpec(name="bypassed", source=SourceSpec("csv", path="data.csv", schema="ts TIMESTAMP, k STRING"),
                        window=Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=["k"],
                                      aggregations=(Aggregation("count", as_="n"),)),
                        target=SinkSpec("sqlite", path="out.sqlite", table="windows"),
                        dead_letter=SinkSpec("sqlite", path="out.sqlite", table="dead_letter"),
                        transform_sql=f"INSERT OVERWRITE DIRECTORY '{tmp_path / 'elsewhere'}' USING text SELECT 'w'",
                        base_dir=str(tmp_path))
    with pytest.raises(ConfigError) as err:
        wid.run_pipeline(spec, spark)
    assert err.value.field == "transform.sql" and "must be a single query" in str(err.value)
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "out.sqlite").exists()
