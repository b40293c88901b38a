"""Running a window-join pipeline: sources -> each side's optional SQL
pre-stage -> window join -> target, with the rejected rows of both sides in
the dead-letter sink (DESIGN.md sections 7 and 8). Batch only: a join on a
stream needs the WID streaming operator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from wid.batch_pipeline import RunReport, run_stage, session_for, write_outputs
from wid.errors import ConfigError
from wid.io.sources import read_source
from wid.spark.errors import translate
from wid.spark.join import JoinResult, join_result, natural_key
from wid.spec.join import JoinStage
from wid.spec.pipeline import JoinPipelineSpec


def compile_join(spark: SparkSession, spec: JoinPipelineSpec) -> JoinResult:
    """Read the sources (each also a SQL view by its name), run each side's
    pre-stage and compile the join. Raises ConfigError naming the field
    (``join.left_sql``, ``join.matching_column[1]``, ...)."""
    frames = {s.name: read_source(spark, s, spec.base_dir) for s in spec.sources}
    for name, df in frames.items():
        df.createOrReplaceTempView(name)
    stage = spec.join
    left, right = _side(spark, frames, stage, "left"), _side(spark, frames, stage, "right")
    try:
        return join_result(left, right, stage.join, left_source=stage.left, right_source=stage.right)
    except ConfigError as err:
        raise err.at("join") from None


def _side(spark: SparkSession, frames: dict[str, DataFrame], stage: JoinStage, side: str) -> DataFrame:
    sql = getattr(stage, f"{side}_sql")
    if sql is None:
        return frames[getattr(stage, side)]
    try:
        return spark.sql(sql)
    except Exception as err:
        raise (translate(err, f"join.{side}_sql") or err) from None


def run_join(spec: JoinPipelineSpec, spark: SparkSession | None = None,
             step: Callable[[str], Any] = lambda _: None) -> RunReport:
    """Run a window-join pipeline end to end. The report's accounting:
    ``rows_in`` (both sides) ``= rows_rejected + rows_aggregated`` (the rows
    of both sides that joined). Raises ConfigError or MissingDependencyError
    on errors a user can fix; other Spark failures propagate unchanged."""
    started = time.monotonic()
    spark = spark or session_for(spec)
    step("compiling")
    result = compile_join(spark, spec)
    key = natural_key(spec.join.join, result.output.columns)
    return run_stage(spec, started, result.prepared, step,
                     lambda: write_outputs(spec, result.output, result.dead_letter, key, step),
                     form=result.form, notes=result.notes, kind="join")


__all__ = ["compile_join", "run_join"]
