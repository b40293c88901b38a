"""The file each input row was read from, for the dead-letter output.

Spark's ``input_file_name()`` names it, where Spark accepts it: over a plan
that reads two or more file sources other than through a ``Union`` (a
join), its analysis refuses the expression
(MULTI_SOURCES_UNSUPPORTED_FOR_EXPRESSION, Spark's ``PreReadCheck``), and
the file is then NULL. On a classic session the plan's leaves tell that
before asking: PySpark turns a refusal into a Python exception through
dozens of calls to the JVM, which cost more than the rest of a window's
plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.logger import PySparkLogger
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.spark.spark_session import is_connect

UNION = re.compile(r"^[\s:|+-]*Union\b", re.MULTILINE)  # a Union node in a plan's tree string


def source_file(df: DataFrame) -> Column:
    """The file a row of `df` was read from, NULL where there is none or
    Spark refuses to name it (module docstring)."""
    return with_source_file(df, lambda file: df.select(file))[1]


def with_source_file(df: DataFrame, build: Callable[[Column], DataFrame]) -> tuple[DataFrame, Column]:
    """`build` (a DataFrame over `df`) given the file each row was read
    from, and that column: ``input_file_name()`` where Spark accepts it
    over `df`'s plan, else NULL. A classic session analyses `build`'s
    DataFrame as it is made; on Spark Connect, where analysis is otherwise
    lazy, it is analysed here, so that the fallback serves there too."""
    none = F.lit(None).cast("string")
    if refused(df):
        return build(none), none
    file = F.nullif(F.input_file_name(), F.lit(""))
    # PySpark logs every AnalysisException of a DataFrame call at ERROR before raising it: this one is
    # expected and handled, so its logger is quiet for the attempt. The logger is PySpark's own class: a
    # plain `logging` logger of that name, made first, would be the one PySpark finds and calls with
    # keywords only its class takes, turning every later Spark error into a TypeError.
    quiet = PySparkLogger.getLogger("DataFrameQueryContextLogger")
    was, quiet.disabled = quiet.disabled, True
    try:
        built = build(file)
        if is_connect(built.sparkSession):
            _ = built.schema
        return built, file
    except AnalysisException:
        return build(none), none
    finally:
        quiet.disabled = was


def refused(df: DataFrame) -> bool:
    """Would Spark refuse ``input_file_name()`` over `df`? True only when
    sure: the analysed plan reads two or more file relations and holds no
    ``Union``. False on Spark Connect, or when the JVM's plan cannot be read
    (another Spark's classes): the caller then asks Spark."""
    if is_connect(df.sparkSession):
        return False
    try:
        plan = df._jdf.queryExecution().analyzed()
        leaves = plan.collectLeaves()
        n = leaves.size()
        if n < 2:
            return False
        files = sum(1 for i in range(n) if _file_relation(leaves.apply(i)))
        return files >= 2 and not UNION.search(plan.treeString())
    except Exception:  # noqa: BLE001 - a shortcut only: asking Spark stays exact
        return False


def _file_relation(leaf: Any) -> bool:
    """Is `leaf` (a JVM logical plan) a relation over files, which Spark's
    check counts (Hive tables and Spark's file sources)?"""
    name = str(leaf.getClass().getSimpleName())
    if name == "HiveTableRelation":
        return True
    return name == "LogicalRelation" and str(leaf.relation().getClass().getSimpleName()) == "HadoopFsRelation"
