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
from pyspark.sql import functions as F

from wid.spark.spark_session import is_connect


def source_file(df: DataFrame) -> Column:
    """The file a row of `df` was read from, NULL where there is none or
    Spark refuses to name it (module docstring)."""
    return with_source_file(lambda file: df.select(file))[1]


def with_source_file(build: Callable[[Column], DataFrame]) -> tuple[DataFrame, Column]:
    """`build` given the file each row was read from, and that column:
    ``input_file_name()`` where Spark accepts it over `build`'s plan, else
    NULL. A classic session analyses `build`'s DataFrame as it is made; on
    Spark Connect, where analysis is otherwise lazy, it is analysed here,
    so that the fallback serves there too."""
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
        none = F.lit(None).cast("string")
        return build(none), none
    finally:
        quiet.disabled = was
