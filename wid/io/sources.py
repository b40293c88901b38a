"""Reading a pipeline's source into a Spark DataFrame."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from wid.errors import ConfigError, MissingDependencyError
from wid.io.kafka import connector, read_kafka
from wid.io.paths import resolve
from wid.spec.pipeline import CORRUPT, STREAM_ONLY, SourceSpec, is_uri
from wid.spec.sql_text import ident, sql_string
from wid.spec.time_text import row_json_sql
from wid.versions import pip_install


def read_source(spark: SparkSession, spec: SourceSpec, base_dir: str = ".", zone: str | None = None) -> DataFrame:
    """A DataFrame of the source: streaming when `spec.is_stream`
    (see `read_stream`), else batch. A text time the declared (or inferred)
    schema reads as a TIMESTAMP is read by docs/semantics.md#time's rule:
    its own offset, else the source's ``timeZone`` option, else `zone` (the
    pipeline window's ``time_zone``), else UTC; never the session's zone.

    Files: CSV (header row expected unless `options.header` says otherwise),
    JSON lines, Parquet, read by `read_files`. Python objects:
    ``module:attribute`` naming a pandas DataFrame, a pyarrow Table, or a
    callable returning one. Raises ConfigError naming ``source.path`` or
    ``source.object`` when the data cannot be found.
    """
    if spec.is_stream:
        return read_stream(spark, spec, base_dir, zone)
    if spec.format == "python":
        return spark.createDataFrame(_python_object(spec.object or "", base_dir))
    path = resolve(spec.path or "", base_dir)
    if not is_uri(path) and not Path(path).exists():
        raise ConfigError("source.path", f"no such file or directory: {path}", "check the path")
    return read_files(spark.read, spec, path, spec.schema or _inferred(spark, spec, path, zone), zone)


def _text_options(spec: SourceSpec, zone: str | None) -> dict[str, str]:
    """Spark's reader options for a CSV or JSON source: a CSV's header row,
    the zone of text times without an offset (`read_source`), then the
    source's own options."""
    if spec.format not in ("csv", "json"):
        return spec.spark_options()
    options = {"timeZone": zone or "UTC", **spec.spark_options()}
    return {"header": "true", **options} if spec.format == "csv" else options


def _inferred(spark: SparkSession, spec: SourceSpec, path: str, zone: str | None) -> T.StructType | None:
    """The schema Spark infers for a CSV or JSON source without one (CSV
    with ``inferSchema``), without the column Spark adds for malformed JSON;
    None for Parquet, whose files carry theirs. A CSV header read byte for
    byte (`_byte_options`) has its names decoded as UTF-8."""
    if spec.format == "parquet":
        return None
    options = _text_options(spec, zone)
    reader = spark.read.options(**{"inferSchema": "true", **options, **_byte_options(spec, options)})
    found = (reader.csv(path) if spec.format == "csv" else reader.json(path)).schema
    fields = [f for f in found.fields if f.name != "_corrupt_record"]
    if _byte_options(spec, options):
        fields = [T.StructField(f.name.encode(LATIN1).decode("utf-8", "replace"), f.dataType) for f in fields]
    return T.StructType(fields)


# CSV text is read one byte a character (ISO-8859-1 maps each byte to the character of its value), so that
# the bytes of every value are there to judge: Spark's UTF-8 decoder would put U+FFFD for bytes that are not
# UTF-8, and a valid U+FFFD in the data would then look the same (`_utf8_checked`).
LATIN1 = "ISO-8859-1"
_SEPARATORS = ("sep", "delimiter", "quote", "escape", "comment", "lineSep", "charToEscapeQuoteEscaping")


def _byte_options(spec: SourceSpec, options: dict[str, str]) -> dict[str, str]:
    """The reader options that read a CSV source byte for byte: a CSV in
    UTF-8 (the default) whose separators and quotes are ASCII (their bytes
    are then the same characters), and whose header is not checked against
    the schema; else none, and the source is read as Spark reads it."""
    encoding = options.get("encoding", options.get("charset", "UTF-8")).replace("-", "").upper()
    ascii_syntax = all(options.get(k, "").isascii() for k in _SEPARATORS)
    if spec.format != "csv" or encoding != "UTF8" or not ascii_syntax or options.get("enforceSchema") == "false":
        return {}
    return {"encoding": LATIN1}


def _utf8_checked(frame: DataFrame, raw: Callable[[str], str]) -> DataFrame:
    """`frame` with its text as UTF-8 judged on the bytes: `raw` gives, as
    SQL text, a string column's bytes as read (a CSV read byte for byte,
    `_byte_options`: re-encoded to them; a Parquet string: as it is, Spark
    reads its bytes unchecked). A row holding bytes that are not UTF-8
    keeps its values (invalid bytes as U+FFFD) and gets `CORRUPT` (the row
    as JSON), so that it goes to the dead letter as a malformed record."""
    def utf8(name: str) -> str:
        return f"make_valid_utf8({raw(name)})"

    def valid(name: str) -> str:
        return f"coalesce(is_valid_utf8({raw(name)}), true)"
    columns = [c for c in frame.columns if c != CORRUPT]
    text = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.StringType) and f.name != CORRUPT]
    kept = f"WHEN {ident(CORRUPT)} IS NOT NULL THEN {utf8(CORRUPT)} " if CORRUPT in frame.columns else ""
    if not text:
        return frame.selectExpr(*map(ident, columns), f"CASE {kept}END AS {ident(CORRUPT)}") if kept else frame
    row = row_json_sql("named_struct(" + ", ".join(
        f"{sql_string(c)}, {utf8(c) if c in text else ident(c)}" for c in columns) + ")")
    corrupt = f"CASE {kept}WHEN NOT ({' AND '.join(valid(c) for c in text)}) THEN {row} END"
    return frame.selectExpr(*[f"{utf8(c)} AS {ident(c)}" if c in text else ident(c) for c in columns],
                            f"{corrupt} AS {ident(CORRUPT)}")


def _from_latin1(name: str) -> str:
    """SQL text: the bytes of a CSV column read byte for byte (`_byte_options`)."""
    return f"CAST(encode({ident(name)}, '{LATIN1}') AS STRING)"


def read_files(reader: Any, spec: SourceSpec, path: str, schema: str | T.StructType | None,
               zone: str | None = None) -> DataFrame:
    """Files through `reader` (``spark.read`` or ``spark.readStream``) with
    `schema` (DDL). CSV and JSON are read the same way in batch and in
    streaming: PERMISSIVE, keeping the raw text of a record that does not
    fit the schema (bad JSON, a wrong-typed value, a CSV row with too few or
    too many fields, bytes that are not UTF-8: a CSV in UTF-8 is read byte for
    byte and judged on its bytes, `_byte_options`) in `CORRUPT`; a Parquet
    row whose strings are not UTF-8 gets it too, so that it
    reaches the dead letter as it was (`wid.spark.prepare.malformed`). Raises ConfigError naming
    ``source.options`` for a reader mode that would drop rows silently.
    Text times are read as `read_source` says, with `zone`."""
    options = _text_options(spec, zone)
    mode = options.get("mode", "PERMISSIVE").upper()
    if mode == "DROPMALFORMED" or "columnNameOfCorruptRecord" in options:
        raise ConfigError("source.options", "wid keeps malformed records for the dead letter itself",
                          "remove mode = DROPMALFORMED and columnNameOfCorruptRecord (FAILFAST stops at the first)")
    reader = reader.options(**options)
    if spec.format == "parquet":  # its strings' bytes are judged as a CSV's are
        return _utf8_checked((reader.schema(schema) if schema else reader).parquet(path), ident)
    by_byte = _byte_options(spec, options) if mode == "PERMISSIVE" else {}
    if mode == "PERMISSIVE":
        schema = (T.StructType([*schema.fields, T.StructField(CORRUPT, T.StringType())])
                  if isinstance(schema, T.StructType) else f"{schema}, {CORRUPT} STRING")
        reader = reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
    reader = reader.options(**by_byte).schema(schema)
    frame = reader.csv(path) if spec.format == "csv" else reader.json(path)
    return _utf8_checked(frame, _from_latin1) if by_byte else frame


def read_stream(spark: SparkSession, spec: SourceSpec, base_dir: str = ".", zone: str | None = None) -> DataFrame:
    """A streaming DataFrame: a landing directory of files (created if
    missing, read as `read_files` reads them, with `schema`), Spark's
    ``rate`` source, or Kafka (`wid.io.kafka.read_kafka`); text times as
    `read_source` says, with `zone`. Raises
    MissingDependencyError naming the Kafka connector when it is not on the
    classpath."""
    if spec.format in STREAM_ONLY:
        try:
            if spec.format == "kafka":
                return read_kafka(spark, spec, zone)
            return spark.readStream.options(**spec.spark_options()).format(spec.format).load()
        except Exception as err:
            if spec.format == "kafka" and "kafka" in str(err).lower() and "data source" in str(err).lower():
                raise MissingDependencyError(
                    "Spark's Kafka connector (spark-sql-kafka-0-10) on the classpath",
                    f"add [spark.conf] \"spark.jars.packages\" = \"{connector(spark.version)}\" (wid does this "
                    "in `wid run`), or put the connector jar and its kafka-clients jar in spark.jars") from None
            raise
    path = resolve(spec.path or "", base_dir)
    if not is_uri(path):  # a landing directory that does not exist yet: Spark's file source needs it
        Path(path).mkdir(parents=True, exist_ok=True)
    return read_files(spark.readStream, spec, path, spec.schema, zone)


def _python_object(ref: str, base_dir: str) -> pa.Table:
    """Import ``module:attribute`` (the pipeline's directory first on the
    path) as a pyarrow Table; pandas NaN becomes SQL NULL."""
    module_name, _, attr = ref.partition(":")
    sys.path.insert(0, base_dir)
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise MissingDependencyError(f"Python module '{module_name}' (source.object)",
                                     f"pip install {module_name}, or {pip_install('examples')} (the examples' data)") from err
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
