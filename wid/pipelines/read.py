"""The read stage of a pipeline: its Spark session, its sources, the SQL
pre-stage and the compiled window or window join (`wid.spark.compile`)."""

from __future__ import annotations

import os

import pyspark
from pyspark.sql import DataFrame, SparkSession

from wid.errors import ConfigError
from wid.io import lakehouse
from wid.io.kafka import uses_kafka, with_connector
from wid.io.kafka_probe import check_kafka
from wid.io.paths import resolve
from wid.io.postgres_probe import check_postgres
from wid.io.sources import read_source
from wid.spark.compile import Compiled, compile_join, compile_real_time, compile_window
from wid.spark.errors import translate
from wid.spark.spark_session import spark_session
from wid.spec.join import JoinStage
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec
from wid.spec.real_time import TRIGGER as REAL_TIME
from wid.spec.sql_query import SINGLE_QUERY, as_subquery, spark_position
from wid.versions import check_install


def session_for(spec: PipelineSpec | JoinPipelineSpec, checks: bool = True) -> SparkSession:
    """A Spark session with the pipeline's `[spark]` settings (``master``
    defaults to ``local[*]``, or ``remote`` names a Spark Connect server;
    ``conf`` holds Spark configuration keys), and Spark's Kafka connector
    when the pipeline reads or writes Kafka (`wid.io.kafka.with_connector`),
    Delta's or Iceberg's jar when it writes such a table
    (`wid.io.lakehouse.with_connector`): a classic session fetches them; a
    Spark Connect server must have them.

    Before Spark starts, the installed PySpark is checked
    (`wid.versions.check_install`: SetupError), and what Spark will
    connect to, each with a
    bounded wait: the Kafka brokers and topics (`check_before_spark`), a
    standalone master (`wid.spark.spark_session.check_master_answers`).
    Raises ConfigError naming the field for one that fails. Without
    `checks`, the brokers and sinks are not checked (``wid status`` reads
    only the checkpoint)."""
    check_install()
    if checks:
        check_before_spark(spec)
    conf = dict(spec.spark.get("conf", {}))
    conf.setdefault("spark.sql.execution.arrow.pyspark.enabled", "true")
    if uses_kafka(spec):
        conf = with_connector(conf, pyspark.__version__)
    if formats := lakehouse.table_formats(spec):
        conf = lakehouse.with_connector(conf, pyspark.__version__, formats)
    session: SparkSession = spark_session(master=spec.spark.get("master"), remote=spec.spark.get("remote"),
                                          app_name=f"wid-{spec.name}", conf=conf)
    return session


def check_before_spark(spec: PipelineSpec | JoinPipelineSpec, network: bool = True) -> None:
    """Check the Kafka brokers and topics (`wid.io.kafka_probe`) and the
    PostgreSQL sinks (`wid.io.postgres_probe`) `spec` uses, each in one
    bounded wait; without `network`, only what needs none (the PostgreSQL
    driver and variables). Nothing when a Spark Connect server runs it (the
    server talks to Kafka and PostgreSQL from its own environment, and may
    reach servers this machine cannot)."""
    if spec.spark.get("remote") or os.environ.get("SPARK_REMOTE"):
        return
    if uses_kafka(spec) and network:
        check_kafka(spec)
    check_postgres(spec, network=network)


def checkpoint_of(spec: PipelineSpec | JoinPipelineSpec) -> str:
    """The pipeline's checkpoint directory (``<name>.checkpoint`` beside the TOML by default)."""
    return resolve(spec.stream.checkpoint or f"{spec.name}.checkpoint", spec.base_dir)


def compile_pipeline(spark: SparkSession, spec: PipelineSpec | JoinPipelineSpec) -> Compiled:
    """Read the sources, apply the SQL pre-stage(s) and compile the window
    or the window join (a stream's operator with its host-local state cache:
    the runner removes it when the query ends, `wid.pipelines.run`). Raises ConfigError for a bad source path, bad SQL
    or missing columns, naming the field."""
    zone = None if isinstance(spec, JoinPipelineSpec) else spec.window.shape.time_zone
    frames = {s.name: read_source(spark, s, spec.base_dir, zone) for s in spec.sources}
    if isinstance(spec, JoinPipelineSpec):
        return _join(spark, frames, spec.join)
    if spec.stream.trigger == REAL_TIME:  # one Kafka source (wid.spec.real_time)
        df = sql_stage(spark, frames, spec.transform_sql, "transform.sql") if spec.transform_sql else frames[spec.source.name]
        return compile_real_time(df, spec.window, source=spec.source.name)
    if not spec.transform_sql:
        return compile_window(frames, spec.window, pipeline=spec.name, state_cache=True)
    df = sql_stage(spark, frames, spec.transform_sql, "transform.sql")
    return compile_window(df, spec.window, pipeline=spec.name, source=spec.source.name, state_cache=True)


def sql_stage(spark: SparkSession, frames: dict[str, DataFrame], sql: str, field: str) -> DataFrame:
    """The rows of query `sql` over the sources (each a view by its name),
    its columns in its order. `sql` runs as a subquery
    (`wid.spec.sql_query.as_subquery`): Spark's parser refuses a statement
    that is not one query before anything runs, even one the check at
    declaration let through. Raises ConfigError naming `field`
    (``transform.sql``, ``join.left_sql``...) for such a statement, an
    unknown column or bad syntax."""
    for name, df in frames.items():
        df.createOrReplaceTempView(name)
    try:
        df = spark.sql(as_subquery(sql))
        _ = df.schema  # analysis runs here on Spark Connect too, where it is otherwise lazy
        return df
    except Exception as err:
        raise _sql_error(err, field, sql) from None


def _sql_error(err: Exception, field: str, sql: str) -> Exception:
    """What `sql_stage` raises for Spark's `err` about the pre-stage
    `field`: Spark's parse error (a statement that is no query, bad syntax)
    or analysis error as ConfigError naming `field`, its line numbers the
    user's query's (`sql`); else `err` as `wid.spark.errors.translate` makes it."""
    if type(err).__name__ == "ParseException":  # classic and Spark Connect alike
        first = str(err).strip().splitlines()[0] if str(err).strip() else "a syntax error"
        first = first.replace(": missing ')'", "")  # the subquery's parenthesis, not the user's
        return ConfigError(field, f"{SINGLE_QUERY}: Spark's parser says {spark_position(first, sql)}",
                           "write one query; a query stage only queries (wid writes the windows to the target)")
    found = translate(err, field) or err
    if isinstance(found, ConfigError):
        return ConfigError(found.field, spark_position(found.problem, sql), found.fix)
    return found


def _join(spark: SparkSession, frames: dict[str, DataFrame], stage: JoinStage) -> Compiled:
    """Each side (a source, or its SQL pre-stage) and the join over them."""
    def side(name: str) -> DataFrame:
        sql = getattr(stage, f"{name}_sql")
        return frames[getattr(stage, name)] if sql is None else sql_stage(spark, frames, sql, f"join.{name}_sql")
    left, right = side("left"), side("right")
    try:
        return compile_join(left, right, stage.join, left_source=stage.left, right_source=stage.right,
                            state_cache=True)
    except ConfigError as err:
        raise err.at("join") from None


__all__ = ["check_before_spark", "checkpoint_of", "compile_pipeline", "session_for", "sql_stage"]
