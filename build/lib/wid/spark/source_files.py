"""The file each input row was read from, for the dead-letter output.

Spark's ``input_file_name()`` names it, where Spark accepts it: over a plan
that reads two or more file sources other than through a ``Union`` (a
join), its analysis refuses the expression
(MULTI_SOURCES_UNSUPPORTED_FOR_EXPRESSION, Spark's ``PreReadCheck``), and
the file is then NULL. Only Spark's analysis tells: the plan's leaves are
not public API, and a Spark Connect client has no JVM to read them from.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.errors import AnalysisException
from pyspark.logger import PySparkLogger
from pyspark.sql import Column, DataFrame

from wid.spark.columns import sql
from wid.spark.spark_session import is_connect

FILE = "nullif(input_file_name(), '')"  # SQL text: the file a row was read from
NO_FILE = "CAST(NULL AS STRING)"


def source_file(df: DataFrame) -> Column:
    """The file a row of `df` was read from, NULL where there is none or
    Spark refuses to name it (module docstring)."""
    return sql(with_source_file(lambda file: df.selectExpr(file))[1])


def with_source_file(build: Callable[[str], DataFrame]) -> tuple[DataFrame, str]:
    """`build` given the file each row was read from as SQL text, and that
    text: `FILE` where Spark accepts it over `build`'s plan, else NULL
    (`NO_FILE`). A classic session analyses `build`'s DataFrame as it is
    made; on Spark Connect, where analysis is otherwise lazy, it is
    analysed here, so that the fallback serves there too."""
    # PySpark logs every AnalysisException of a DataFrame call at ERROR before raising it (under
    # "SQLQueryContextLogger" when the expression was SQL text): this one is expected and handled, so
    # those loggers are quiet for the attempt. They are PySpark's own class: a plain `logging` logger of
    # that name, made first, would be the one PySpark finds and calls with keywords only its class
    # takes, turning every later Spark error into a TypeError.
    quiet = [PySparkLogger.getLogger(name) for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger")]
    were = [logger.disabled for logger in quiet]
    for logger in quiet:
        logger.disabled = True
    try:
        built = build(FILE)
        if is_connect(built.sparkSession):
            _ = built.schema
        return built, FILE
    except AnalysisException:
        return build(NO_FILE), NO_FILE
    finally:
        for logger, was in zip(quiet, were, strict=True):
            logger.disabled = was
