"""Reading a pipeline's source into a Spark DataFrame."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from wid.errors import ConfigError, MissingDependencyError
from wid.spark.columns import CORRUPT
from wid.spec.pipeline import STREAM_ONLY, SourceSpec


def resolve(path: str, base_dir: str) -> str:
    """`path` made absolute against `base_dir` (the TOML file's directory)."""
    p = Path(path).expanduser()
    return str((p if p.is_absolute() else Path(base_dir) / p).resolve())


KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13"


def read_source(spark: SparkSession, spec: SourceSpec, base_dir: str = ".") -> DataFrame:
    """A DataFrame of the source: streaming when `spec.is_stream`
    (see `read_stream`), else batch.

    Files: CSV (header row expected unless `options.header` says otherwise;
    schema inferred unless `schema` is given), JSON lines, Parquet. Python
    objects: ``module:attribute`` naming a pandas DataFrame, a pyarrow Table,
    or a callable returning one. Raises ConfigError naming ``source.path``
    or ``source.object`` when the data cannot be found.
    """
    if spec.is_stream:
        return read_stream(spark, spec, base_dir)
    if spec.format == "python":
        return spark.createDataFrame(_python_object(spec.object or "", base_dir))
    path = resolve(spec.path or "", base_dir)
    if not Path(path).exists():
        raise ConfigError("source.path", f"no such file or directory: {path}", "check the path")
    reader = spark.read.options(**{k: str(v) for k, v in spec.options.items()})
    if spec.schema:
        reader = reader.schema(spec.schema)
    if spec.format == "csv":
        opts = {"header": "true", "inferSchema": "false" if spec.schema else "true"}
        opts.update({k: str(v) for k, v in spec.options.items()})
        return reader.options(**opts).csv(path)
    if spec.format == "json":
        return reader.json(path)
    return reader.parquet(path)


def read_stream(spark: SparkSession, spec: SourceSpec, base_dir: str = ".") -> DataFrame:
    """A streaming DataFrame: a landing directory of files (created if
    missing, read with `schema`), Spark's ``rate`` source, or Spark's
    ``kafka`` format. Raises MissingDependencyError naming the Kafka
    connector when it is not on the classpath."""
    options = {k: str(v) for k, v in spec.options.items()}
    reader = spark.readStream.options(**options)
    if spec.format in STREAM_ONLY:
        try:
            return reader.format(spec.format).load()
        except Exception as err:
            if spec.format == "kafka" and "kafka" in str(err).lower() and "data source" in str(err).lower():
                version = spark.version
                raise MissingDependencyError(
                    "Spark's Kafka connector (spark-sql-kafka-0-10) on the classpath",
                    f"add [spark.conf] \"spark.jars.packages\" = \"{KAFKA_PACKAGE}:{version}\" "
                    "(or put the connector jar and its kafka-clients jar in spark.jars)") from None
            raise
    path = Path(resolve(spec.path or "", base_dir))
    path.mkdir(parents=True, exist_ok=True)
    if spec.format == "parquet":
        return reader.schema(spec.schema or "").parquet(str(path))
    # keep unparseable records (bad JSON, wrong types) so they reach the dead letters
    reader = reader.schema(f"{spec.schema}, {CORRUPT} STRING").option("mode", "PERMISSIVE").option(
        "columnNameOfCorruptRecord", CORRUPT)
    if spec.format == "csv":
        return reader.options(**{"header": "true", **options}).csv(str(path))
    return reader.json(str(path))


def _python_object(ref: str, base_dir: str) -> pa.Table:
    """Import ``module:attribute`` (the pipeline's directory first on the
    path) as a pyarrow Table; pandas NaN becomes SQL NULL."""
    module_name, _, attr = ref.partition(":")
    sys.path.insert(0, base_dir)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise MissingDependencyError(f"Python module '{module_name}' (source.object)",
                                     f"pip install {module_name}, or install wid with its [examples] extra") from err
    finally:
        sys.path.remove(base_dir)
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise ConfigError("source.object", f"module '{module_name}' has no attribute '{attr}'") from None
    value = value() if callable(value) else value
    if isinstance(value, pa.Table):
        return value
    if hasattr(value, "iloc"):
        return pa.Table.from_pandas(value, preserve_index=False)
    raise ConfigError("source.object", f"'{ref}' is not a pandas DataFrame or pyarrow Table")
