"""Input preparation: check the declared columns exist, normalise the event
time to epoch microseconds, and mark each row that cannot be windowed with a
reason (docs/semantics.md); and the rejected rows in the
dead-letter shape.

A prepared DataFrame is the input plus `TS` (long, epoch microseconds),
`REASON` (string, NULL for a good row), `REJECTED_FILE` (the file a
rejected row was read from) and, for each string column an
aggregation reads as a number, that column cast to DOUBLE under
``NUMERIC + name`` (`numeric_window` points the aggregations at it). Good
rows go on to the window stage; the others go to the dead-letter output, so
nothing is lost silently.

Event times of Spark's ``TIMESTAMP_NTZ`` type are wall-clock times: their
microseconds are the wall clock read as UTC, whatever the session time
zone, so windows align on the wall clock as Spark's ``window()`` aligns
them, and `wall_clock` tells the output stage to give the bounds back as
``TIMESTAMP_NTZ`` (`wid.spark.columns.wall_clock_bounds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.errors import ConfigError
from wid.semantics import reasons
from wid.spark.columns import CORRUPT, PREFIX, REASON, TS, lit_long, wall_clock_us
from wid.spark.source_files import with_source_file
from wid.spec.pipeline import KAFKA_VALUE
from wid.spec.window import Window

_ROLES = ("event_time_column", "gap_column", "order_by", "tie_breaker")
NUMERIC = "_wid_num_"  # + column: a string column an aggregation reads as a number, as DOUBLE
REJECTED_FILE = "_wid_rejected_file"  # the file a rejected row was read from (NULL for good rows)
REPLACEMENT = "\ufffd"  # what a decoder puts for bytes that are not UTF-8
DEAD_LETTER_COLUMNS = ("reason", "source", "source_file", "row_json")


def check_columns(df: DataFrame, window: Window) -> None:
    """Raise ConfigError naming the field when a column the window reads is
    missing, or when the input uses wid's reserved ``_wid_`` prefix."""
    have = set(df.columns)
    listing = ", ".join(df.columns)
    reserved = [c for c in df.columns if c.startswith(PREFIX) and c != CORRUPT]
    if reserved:
        raise ConfigError("input", f"column '{reserved[0]}' uses the reserved prefix {PREFIX}",
                          "rename it in a [transform] sql pre-stage")
    wanted: list[tuple[str, str]] = [(role, getattr(window, role)) for role in _ROLES if getattr(window, role)]
    wanted += [("partition_by", c) for c in window.partition_by] + [("group_by", c) for c in window.group_by]
    for i, agg in enumerate(window.aggregations):
        wanted += [(f"aggregations[{i}].column", c) for c in agg.columns]
    for role, col in wanted:
        if col not in have:
            raise ConfigError(role, f"column '{col}' is not in the input (columns: {listing})",
                              "fix the name, or derive the column in a [transform] sql pre-stage")


def event_time(df: DataFrame, window: Window) -> tuple[Column, Column]:
    """(`window`'s event time of `df`'s rows in epoch microseconds, True
    where a non-null value did not parse); the time now under processing
    time. Raises ConfigError as `event_time_us`."""
    if window.time_mode == "processing":
        return F.unix_micros(F.current_timestamp()), F.lit(False)
    return event_time_us(df, window.event_time_column or "", window.event_time_unit)


def event_time_us(df: DataFrame, name: str, unit: str, field: str = "event_time_unit") -> tuple[Column, Column]:
    """Column `name` in `unit` (``timestamp``, ``ms``, ``us``) as epoch
    microseconds (a ``TIMESTAMP_NTZ`` as its wall clock read as UTC), and
    True where a non-null value did not parse. Raises ConfigError naming
    `field` when the column's type does not fit the unit."""
    col = F.col(name)
    dtype = df.schema[name].dataType
    if unit == "timestamp":
        if isinstance(dtype, T.TimestampNTZType):
            us = wall_clock_us(col)
        elif isinstance(dtype, T.TimestampType | T.DateType):
            us = F.unix_micros(col.cast("timestamp"))
        elif isinstance(dtype, T.StringType):
            us = F.unix_micros(F.try_to_timestamp(col))
        else:
            raise ConfigError(field, f"column '{name}' is {dtype.simpleString()}, "
                              "not a timestamp", f"declare {field} = 'ms' or 'us' for epoch numbers")
    else:
        if not isinstance(dtype, T.IntegralType | T.StringType | T.DecimalType):
            raise ConfigError(field, f"{field} = '{unit}' needs an integer column; "
                              f"'{name}' is {dtype.simpleString()}", "cast it in a [transform] sql pre-stage")
        raw = col.try_cast("long") if isinstance(dtype, T.StringType) else col.cast("long")
        us = raw * 1000 if unit == "ms" else raw  # long * int: long
    return us, col.isNotNull() & us.isNull()


def wall_clock(df: DataFrame, window: Window) -> bool:
    """True when `window`'s event time is a ``TIMESTAMP_NTZ`` column of
    `df`: its bounds are then wall-clock times of that type."""
    name = window.event_time_column
    return (window.time_mode == "event" and window.event_time_unit == "timestamp" and name is not None
            and name in df.columns and isinstance(df.schema[name].dataType, T.TimestampNTZType))


def first_reason(checks: list[tuple[Column, str]]) -> Column:
    """The reason of the first check whose condition holds, else NULL: one
    ``CASE WHEN`` (the reasons go to Spark as plain strings, as each Column
    built costs the driver round trips to the JVM)."""
    if not checks:
        return F.lit(None).cast("string")
    (cond, text), *rest = checks
    reason = F.when(cond, text)
    for cond, text in rest:
        reason = reason.when(cond, text)
    return reason


def _string_columns(df: DataFrame, names: tuple[str, ...] | None = None) -> list[str]:
    return [f.name for f in df.schema.fields if isinstance(f.dataType, T.StringType)
            and not f.name.startswith(PREFIX) and (names is None or f.name in names)]


def malformed(df: DataFrame) -> Column | None:
    """True for a record the file reader could not read as declared: it kept
    the raw text in `CORRUPT` (bad JSON, a wrong-typed value, a CSV row with
    too few or too many fields), or a text column holds U+FFFD, which the
    decoder puts for bytes that are not UTF-8 (CSV keeps such rows, JSON
    rejects them). None when `df` was not read by wid's file reader."""
    if CORRUPT not in df.columns:
        return None
    checks = [F.col(CORRUPT).isNotNull(), *[F.contains(F.col(c), F.lit(REPLACEMENT)) for c in _string_columns(df)]]
    return F.coalesce(F.greatest(*checks), F.lit(False)) if len(checks) > 1 else checks[0]


def numeric_casts(df: DataFrame, window: Window) -> dict[str, Column]:
    """``NUMERIC + name`` -> the DOUBLE value of each string column an
    aggregation reads as a number (NULL where it does not parse)."""
    return {NUMERIC + c: F.col(c).try_cast("double") for c in _string_columns(df, window.numeric_columns)}


def numeric_window(df: DataFrame, window: Window) -> Window:
    """`window` with aggregations reading the DOUBLE casts of string columns
    (`numeric_casts`) instead; `window` itself when it reads none."""
    cast = set(_string_columns(df, window.numeric_columns))
    if not cast:
        return window

    def point(name: str | None, numeric: bool) -> str | None:
        return NUMERIC + name if numeric and name in cast else name
    aggs = tuple(replace(a, column=point(a.column, a.numeric), column2=point(a.column2, a.numeric))
                 for a in window.aggregations)
    return replace(window, aggregations=aggs)


def prepare(df: DataFrame, window: Window, *, files: bool = True) -> DataFrame:
    """`df` plus `TS`, `REASON`, the `numeric_casts` and, with `files`,
    `REJECTED_FILE` (see `marked`). Reasons, first match
    wins: a malformed record (`malformed`), null event time, unparseable
    event time, null key column (partition then group), null or
    non-positive session gap, event time before the landmark, a value an
    aggregation reads as a number that is not one. Raises ConfigError for
    missing columns or an event-time type that does not fit
    `event_time_unit`."""
    check_columns(df, window)
    us, unparseable = event_time(df, window)
    checks: list[tuple[Column, str]] = []
    bad_record = malformed(df)
    if bad_record is not None:
        checks.append((bad_record, reasons.MALFORMED))
    if window.time_mode == "event":
        checks.append((F.col(window.event_time_column or "").isNull(), reasons.NULL_EVENT_TIME))
        checks.append((unparseable, reasons.UNPARSEABLE_EVENT_TIME))
    checks += [(F.col(c).isNull(), reasons.null_key(c)) for c in window.key_columns]
    if window.gap_column:
        gap = F.col(window.gap_column)
        checks.append((gap.isNull() | (gap <= 0), reasons.bad_gap(window.gap_column)))
    if window.kind == "landmark" and window.landmark_ms is not None:
        checks.append((us < lit_long(window.landmark_ms * 1000), reasons.BEFORE_LANDMARK))
    casts = numeric_casts(df, window)
    for name, cast in casts.items():
        raw = name[len(NUMERIC):]
        checks.append((F.col(raw).isNotNull() & cast.isNull(), reasons.not_a_number(raw)))
    return marked(df, us, checks, casts, files=files)


def marked(df: DataFrame, us: Column, checks: list[tuple[Column, str]],
           more: Mapping[str, Column] | None = None, *, files: bool = True) -> DataFrame:
    """`df` plus the columns `more`, `TS` (`us`), `REASON` (the first of
    `checks` that holds) and, with `files`, `REJECTED_FILE`, read with the
    row: a cached prepared DataFrame no longer knows its files. Without
    `files` the plan does not name the files at all, which spares the
    driver Spark's refusal of ``input_file_name()`` over a join
    (`wid.spark.source_files`). One projection: each DataFrame step costs
    the driver a round of Spark's analysis."""
    reason = first_reason(checks)
    extra = [c.alias(name) for name, c in (more or {}).items()]
    if not files:
        return df.select("*", *extra, us.alias(TS), reason.alias(REASON))
    return with_source_file(lambda file: df.select("*", *extra, us.alias(TS), reason.alias(REASON),
                                                   F.when(reason.isNotNull(), file).alias(REJECTED_FILE)))[0]


def good_rows(prepared: DataFrame) -> DataFrame:
    """The rows of a prepared DataFrame that go on to the window stage.
    `REASON` and any `REJECTED_FILE` (NULL here) stay: every plan selects the
    columns it reads and Spark prunes the rest, and a ``drop`` would be one
    more DataFrame step, each costing the driver a round of analysis."""
    return prepared.where(F.col(REASON).isNull())


def originals(df: DataFrame) -> list[str]:
    """The input's own columns (not wid's)."""
    return [c for c in df.columns if not c.startswith(PREFIX)]


def row_json(prepared: DataFrame) -> Column:
    """The original row as JSON, or the raw text of a malformed record; a
    Kafka message always as JSON, which holds its bytes (``_key``,
    ``_value``, base64) and position."""
    parsed = F.to_json(F.struct(*originals(prepared)), {"ignoreNullFields": "false"})
    if CORRUPT not in prepared.columns or KAFKA_VALUE in prepared.columns:
        return parsed
    return F.coalesce(F.col(CORRUPT), parsed)


def dead_letters(prepared: DataFrame, source: str) -> DataFrame:
    """The rejected rows of a prepared DataFrame, in the dead-letter shape
    (`DEAD_LETTER_COLUMNS`): reason, the `source` name, the file it was read
    from (`source_file`), and the original row (`row_json`)."""
    rejected = prepared.where(F.col(REASON).isNotNull())
    return rejected.select(F.col(REASON).alias("reason"), F.lit(source).alias("source"),
                           F.col(REJECTED_FILE).alias("source_file"), row_json(prepared).alias("row_json"))

