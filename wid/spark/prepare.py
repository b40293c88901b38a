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
``TIMESTAMP_NTZ`` (`wid.spark.columns.as_wall_clock`). With a Window's
`time_zone` they are that zone's local times: the event time is their
instant, and the bounds are given back as the zone's wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.errors import ConfigError
from wid.semantics import reasons
from wid.semantics.timeunits import MAX_US, MIN_US, US_PER_MS
from wid.spark.columns import CORRUPT, PREFIX, REASON, TS, ident, sql_string, wall_clock_us
from wid.spark.kinds import plan_of
from wid.spark.source_files import with_source_file
from wid.spec.inputs import window_columns
from wid.spec.pipeline import KAFKA_VALUE
from wid.spec.time_text import ROW_JSON_OPTIONS, instant_from_text
from wid.spec.window import Window

NUMERIC = "_wid_num_"  # + column: a string column an aggregation reads as a number, as DOUBLE
REJECTED_FILE = "_wid_rejected_file"  # the file a rejected row was read from (NULL for good rows)
DEAD_LETTER_COLUMNS = ("reason", "source", "source_file", "row_json")
Check = tuple[str, str]  # (SQL condition, the reason of a row it holds for)


def check_columns(df: DataFrame, window: Window) -> None:
    """Raise ConfigError naming the field when a column the window reads is
    missing, or when the input uses wid's reserved ``_wid_`` prefix."""
    have = set(df.columns)
    listing = ", ".join(c for c in df.columns if not c.startswith(PREFIX))  # wid's own columns are not the user's
    reserved = [c for c in df.columns if c.startswith(PREFIX) and c != CORRUPT]
    if reserved:
        raise ConfigError("input", f"column '{reserved[0]}' uses the reserved prefix {PREFIX}",
                          "rename it (DataFrame.withColumnRenamed)", "rename it in a [transform] sql pre-stage")
    for role, col in window_columns(window):
        if col not in have:
            raise ConfigError(role, f"column '{col}' is not in the input (columns: {listing})",
                              "fix the name, or derive the column (DataFrame.withColumn)",
                              "fix the name, or derive the column in a [transform] sql pre-stage")


NOW_US = "unix_micros(current_timestamp())"  # processing time, epoch microseconds (a micro-batch's timestamp)


@dataclass(frozen=True)
class EventTime:
    """An event time as SQL text: `us`, epoch microseconds (NULL where the
    value does not convert), and `checks`, the (condition, reason) pairs of
    the values that are bad input, in order (`first_reason`)."""

    us: str
    checks: tuple[Check, ...] = ()

    @property
    def valid_us(self) -> str:
        """SQL text: `us` where no check holds, else NULL (a punctuation's
        time that a data row would be rejected for says nothing)."""
        if not self.checks:
            return self.us
        return "CASE " + " ".join(f"WHEN {cond} THEN NULL" for cond, _ in self.checks) + f" ELSE {self.us} END"


def event_time(df: DataFrame, window: Window) -> EventTime:
    """`window`'s event time of `df`'s rows (`event_time_us`), with the
    future guard (`Window.future_guard_ms`: unset, one day on a stream and
    none in batch): a time more than that ahead of the processing
    time (``current_timestamp()``: on a stream, the micro-batch's timestamp,
    which Spark records in its offset log, so a replay judges the same) is
    "event time in the future". The time now under processing time. Raises
    ConfigError as `event_time_us`."""
    if window.time_mode == "processing":
        return EventTime(NOW_US)
    found = event_time_us(df, window.event_time_column or "", window.event_time_unit, zone=window.shape.time_zone)
    guard_ms = window.future_guard_ms(df.isStreaming)
    if guard_ms is None:
        return found
    future = f"({found.us} > {NOW_US} + {guard_ms * 1000}L)"
    return replace(found, checks=(*found.checks, (future, reasons.IN_FUTURE)))


def event_time_us(df: DataFrame, name: str, unit: str, field: str = "event_time_unit",
                  zone: str | None = None) -> EventTime:
    """Column `name` in `unit` (``timestamp``, ``ms``, ``us``) as epoch
    microseconds (a ``TIMESTAMP_NTZ`` as its wall clock read as UTC, or with
    a `zone` as that zone's local time: Spark's ``to_utc_timestamp``, which
    moves a time in a gap forward by the gap and gives an ambiguous one its
    first instant; a text by its own offset, else in `zone`, else in UTC,
    whatever the session's zone: `wid.spec.time_text.instant_from_text`), with
    its checks: a text that does not parse ("unparseable event time"), and
    a value outside Spark's TIMESTAMP range or too large to convert ("event
    time out of range": ``try_multiply``, so that one row never fails the
    query). A NULL is the caller's check. Raises ConfigError naming `field`
    when the column's type does not fit the unit."""
    col = ident(name)
    dtype = df.schema[name].dataType
    text = isinstance(dtype, T.StringType)
    if unit == "timestamp":
        if isinstance(dtype, T.TimestampNTZType):
            raw = wall_clock_us(col) if zone is None else \
                f"unix_micros(to_utc_timestamp(timestamp_micros({wall_clock_us(col)}), {sql_string(zone)}))"
        elif isinstance(dtype, T.TimestampType | T.DateType):
            raw = f"unix_micros(CAST({col} AS TIMESTAMP))"
        elif text:
            raw = f"unix_micros({instant_from_text(col, zone)})"
        else:
            raise ConfigError(field, f"column '{name}' is {dtype.simpleString()}, "
                              "not a timestamp", f"give {field}='ms' or 'us' for epoch numbers",
                              f"declare {field} = 'ms' or 'us' for epoch numbers")
        us = raw
    else:
        if not isinstance(dtype, T.IntegralType | T.StringType | T.DecimalType):
            raise ConfigError(field, f"{field} = '{unit}' needs an integer column; "
                              f"'{name}' is {dtype.simpleString()}", "cast it (F.col(...).cast('long'))",
                              "cast it in a [transform] sql pre-stage")
        raw = f"{'CAST' if isinstance(dtype, T.IntegralType) else 'try_cast'}({col} AS BIGINT)"
        us = f"try_multiply({raw}, {US_PER_MS}L)" if unit == "ms" else raw
    checks: list[Check] = [(f"({col} IS NOT NULL AND {raw} IS NULL)", reasons.UNPARSEABLE_EVENT_TIME)] if text else []
    checks.append((f"({col} IS NOT NULL AND ({us} IS NULL OR {us} < {MIN_US}L OR {us} > {MAX_US}L))",
                   reasons.OUT_OF_RANGE))
    return EventTime(us, tuple(checks))


def punctuation_mark(predicate: str) -> Column:
    """True for a row the punctuation `predicate` (user SQL, parsed on its
    own) marks, False where it is false or NULL."""
    return F.coalesce(F.expr(predicate), F.lit(False))


def first_reason(checks: list[Check]) -> str:
    """SQL text: the reason of the first check whose condition holds, else
    NULL (one ``CASE WHEN``)."""
    if not checks:
        return "CAST(NULL AS STRING)"
    return "CASE " + " ".join(f"WHEN {cond} THEN {sql_string(text)}" for cond, text in checks) + " END"


def _string_columns(df: DataFrame, names: tuple[str, ...] | None = None) -> list[str]:
    return [f.name for f in df.schema.fields if isinstance(f.dataType, T.StringType)
            and not f.name.startswith(PREFIX) and (names is None or f.name in names)]


def malformed(df: DataFrame) -> str | None:
    """True for a record the file reader could not read as declared: it kept
    the raw text in `CORRUPT` (bad JSON, a wrong-typed value, a CSV row with
    too few or too many fields, bytes that are not UTF-8: judged on the
    bytes, `wid.io.sources.read_files`, so a valid U+FFFD is valid). None
    when `df` was not read by wid's file reader. SQL text."""
    return f"{ident(CORRUPT)} IS NOT NULL" if CORRUPT in df.columns else None


def numeric_casts(df: DataFrame, window: Window) -> dict[str, str]:
    """``NUMERIC + name`` -> the DOUBLE value of each string column an
    aggregation reads as a number (NULL where it does not parse), as SQL
    text."""
    return {NUMERIC + c: f"try_cast({ident(c)} AS DOUBLE)" for c in _string_columns(df, window.numeric_columns)}


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
    event time, event time out of range, event time in the future
    (`event_time`), null key column (partition then group), the kind's
    own (a session's null or non-positive gap: `wid.spark.kinds`), event
    time before the landmark, a value an
    aggregation reads as a number that is not one. Raises ConfigError for
    missing columns or an event-time type that does not fit
    `event_time_unit`."""
    check_columns(df, window)
    ts = event_time(df, window)
    us = ts.us
    checks: list[Check] = []
    bad_record = malformed(df)
    if bad_record is not None:
        checks.append((bad_record, reasons.MALFORMED))
    if window.time_mode == "event":
        checks.append((f"{ident(window.event_time_column or '')} IS NULL", reasons.NULL_EVENT_TIME))
    checks += ts.checks
    checks += [(f"{ident(c)} IS NULL", reasons.null_key(c)) for c in window.key_columns]
    checks += plan_of(window).bad_input(window)
    earliest = window.shape.earliest_ms()
    if earliest is not None:
        checks.append((f"{us} < {earliest * 1000}L", reasons.BEFORE_LANDMARK))
    casts = numeric_casts(df, window)
    for name, cast in casts.items():
        raw = name[len(NUMERIC):]
        checks.append((f"({ident(raw)} IS NOT NULL AND {cast} IS NULL)", reasons.not_a_number(raw)))
    return marked(df, us, checks, casts, files=files)


def marked(df: DataFrame, us: str, checks: list[Check], more: Mapping[str, str] | None = None, *,
           files: bool = True) -> DataFrame:
    """`df` plus the columns `more`, `TS` (`us`), `REASON` (the first of
    `checks` that holds; `us`, `checks` and `more` are SQL text, see
    `wid.spark.columns.sql`) and, with `files`, `REJECTED_FILE`, read with the
    row: a cached prepared DataFrame no longer knows its files. Without
    `files` the plan does not name the files at all, which spares the
    driver Spark's refusal of ``input_file_name()`` over a join
    (`wid.spark.source_files`). One projection: each DataFrame step costs
    the driver a round of Spark's analysis."""
    reason = first_reason(checks)
    columns = [f"{text} AS {ident(name)}" for name, text in {**(more or {}), TS: us, REASON: reason}.items()]
    if not files:
        return df.selectExpr("*", *columns)
    return with_source_file(lambda file: df.selectExpr(
        "*", *columns, f"CASE WHEN ({reason}) IS NOT NULL THEN {file} END AS {ident(REJECTED_FILE)}"))[0]


def good_rows(prepared: DataFrame) -> DataFrame:
    """The rows of a prepared DataFrame that go on to the window stage.
    `REASON` and any `REJECTED_FILE` (NULL here) stay: every plan selects the
    columns it reads and Spark prunes the rest, and a ``drop`` would be one
    more DataFrame step, each costing the driver a round of analysis."""
    return prepared.where(f"{ident(REASON)} IS NULL")


def originals(df: DataFrame) -> list[str]:
    """The input's own columns (not wid's)."""
    return [c for c in df.columns if not c.startswith(PREFIX)]


def row_json(prepared: DataFrame) -> Column:
    """The original row as JSON, or the raw text of a malformed record; a
    Kafka message always as JSON, which holds its bytes (``_key``,
    ``_value``, base64) and position."""
    parsed = F.to_json(F.struct(*originals(prepared)), ROW_JSON_OPTIONS)
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

