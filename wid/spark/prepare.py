"""Input preparation: check the declared columns exist, normalise the event
time to epoch microseconds, and mark each row that cannot be windowed with a
reason (DESIGN.md sections 2 and 5).

A prepared DataFrame is the input plus two columns: `TS` (long, epoch
microseconds) and `REASON` (string, NULL for a good row). Good rows go on to
the window stage; the others go to the dead-letter output, so nothing is
lost silently.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.errors import ConfigError
from wid.semantics import reasons
from wid.spark.columns import CORRUPT, PREFIX, REASON, TS, lit_long
from wid.spec.window import Window

_ROLES = ("event_time_column", "gap_column", "order_by", "tie_breaker")


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
    microseconds, and True where a non-null value did not parse. Raises
    ConfigError naming `field` when the column's type does not fit the unit."""
    col = F.col(name)
    dtype = df.schema[name].dataType
    if unit == "timestamp":
        if isinstance(dtype, T.TimestampType | T.TimestampNTZType | T.DateType):
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
        us = raw * lit_long(1000) if unit == "ms" else raw
    return us, col.isNotNull() & us.isNull()


def first_reason(checks: list[tuple[Column, Column]]) -> Column:
    """The reason of the first check whose condition holds, else NULL."""
    reason: Column = F.lit(None).cast("string")
    for cond, text in reversed(checks):
        reason = F.when(cond, text).otherwise(reason)
    return reason


def prepare(df: DataFrame, window: Window) -> DataFrame:
    """`df` plus `TS` and `REASON`. Reasons, first match wins: a malformed
    record (when the reader kept its raw text in `CORRUPT`), null event
    time, unparseable event time, null key column (partition then group),
    null or non-positive session gap, event time before the landmark.
    Raises ConfigError for missing columns or an event-time type that does
    not fit `event_time_unit`."""
    check_columns(df, window)
    us, unparseable = event_time(df, window)
    checks: list[tuple[Column, Column]] = []
    if CORRUPT in df.columns:
        checks.append((F.col(CORRUPT).isNotNull(), F.lit(reasons.MALFORMED)))
    if window.time_mode == "event":
        checks.append((F.col(window.event_time_column or "").isNull(), F.lit(reasons.NULL_EVENT_TIME)))
        checks.append((unparseable, F.lit(reasons.UNPARSEABLE_EVENT_TIME)))
    checks += [(F.col(c).isNull(), F.lit(reasons.null_key(c))) for c in window.key_columns]
    if window.gap_column:
        gap = F.col(window.gap_column)
        checks.append((gap.isNull() | (gap <= 0), F.lit(reasons.bad_gap(window.gap_column))))
    if window.kind == "landmark" and window.landmark_ms is not None:
        checks.append((us < lit_long(window.landmark_ms * 1000), F.lit(reasons.BEFORE_LANDMARK)))
    return df.withColumn(TS, us).withColumn(REASON, first_reason(checks))
