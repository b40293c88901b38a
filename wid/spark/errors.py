"""Turning Spark exceptions a user can cause into wid errors with one clear
message (the JVM stack trace stays behind `--debug`)."""

from __future__ import annotations

import re

from wid.errors import ConfigError, SinkError, SinkUnavailableError, StateCapError, WidError

# A cap message, not its template (``%s`` for the window's bounds), which a plan printed in another
# error holds (`wid.spark.stage.enforce_group_cap`)
_CAP = re.compile(r"((?:window state|distinct-value) cap hit: (?:(?!%s).)*?)(?:\s+SQLSTATE.*)?$", re.M)
_SHARDS = re.compile(r"(this checkpoint's state was written with \d+ shards.*?)(?:\s+SQLSTATE.*)?$", re.M)
_SINK = re.compile(r"(sink (?:error|unavailable): .*?)(?:\s+SQLSTATE.*)?$", re.M)


# errors a value of one row raises in a SQL expression (Spark's ANSI mode), and the safe form that makes it NULL
ROW_ERRORS = {
    "CAST_INVALID_INPUT": "try_cast, try_to_timestamp or try_to_number",
    "CANNOT_PARSE_TIMESTAMP": "try_to_timestamp",
    "CAST_OVERFLOW": "try_cast",
    "DIVIDE_BY_ZERO": "try_divide",
    "ARITHMETIC_OVERFLOW": "try_add, try_subtract or try_multiply",
    "NUMERIC_VALUE_OUT_OF_RANGE": "try_cast to a wider type",
    "DATETIME_FIELD_OUT_OF_BOUNDS": "try_make_timestamp",
}


def row_error(exc: BaseException, field: str = "transform.sql") -> ConfigError | None:
    """A value that failed in the user's SQL (`field`: the pre-stage that
    holds it) as one line: what failed, in which expression, and the safe
    form, with which the value becomes NULL and a NULL event time or key
    sends the row to the dead letter. None for other errors (wid's own
    plans carry no SQL text)."""
    condition = getattr(exc, "getCondition", lambda: None)()
    if condition not in ROW_ERRORS:
        return None
    contexts = [c for c in getattr(exc, "getQueryContext", list)() if c.contextType().name == "SQL"]
    if not contexts:
        return None
    text = re.sub(r"^\[[A-Z_.]+\]\s*", "", str(exc).strip().splitlines()[0])
    first = text.split(". ")[0].rstrip(".")
    return ConfigError(field, f"{first}, in `{contexts[0].fragment()}`",
                       f"use {ROW_ERRORS[condition]}: the value becomes NULL, and a NULL event time or key sends "
                       "its row to the dead letter")


def translate(exc: BaseException, sql_field: str | None = None) -> WidError | None:
    """The wid error `exc` stands for, or None if it is not one a user caused.

    Cap violations raised inside Spark become StateCapError. With
    `sql_field`, analysis errors (unknown column, syntax) become ConfigError
    naming that field. A value that fails in the SQL pre-stage becomes one
    line naming the safe function (`row_error`).
    """
    row = row_error(exc, sql_field or "transform.sql")
    if row is not None:
        return row
    message = str(exc)
    match = _CAP.search(message)
    if match:
        return StateCapError(match.group(1).strip())
    shards = _SHARDS.search(message)
    if shards:
        return ConfigError("spark.wid.operator.shards", shards.group(1).strip())
    sink = _SINK.search(message)  # raised in a stream's foreachBatch, wrapped by Spark
    if sink:
        unavailable = sink.group(1).startswith("sink unavailable:")
        return (SinkUnavailableError if unavailable else SinkError)(sink.group(1).strip())
    name = type(exc).__name__
    if sql_field and name in ("AnalysisException", "ParseException"):
        first = message.strip().splitlines()[0] if message.strip() else name
        return ConfigError(sql_field, first)
    return None
