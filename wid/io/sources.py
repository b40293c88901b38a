"""Reading a pipeline's source into a Spark DataFrame."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from wid.errors import ConfigError, MissingDependencyError
from wid.spec.pipeline import SourceSpec


def resolve(path: str, base_dir: str) -> str:
    """`path` made absolute against `base_dir` (the TOML file's directory)."""
    p = Path(path).expanduser()
    return str((p if p.is_absolute() else Path(base_dir) / p).resolve())


def read_source(spark: SparkSession, spec: SourceSpec, base_dir: str = ".") -> DataFrame:
    """A batch DataFrame of the source.

    Files: CSV (header row expected unless `options.header` says otherwise;
    schema inferred unless `schema` is given), JSON lines, Parquet. Python
    objects: ``module:attribute`` naming a pandas DataFrame, a pyarrow Table,
    or a callable returning one. Raises ConfigError naming ``source.path``
    or ``source.object`` when the data cannot be found.
    """
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
