"""Turning Spark exceptions a user can cause into wid errors with one clear
message (the JVM stack trace stays behind `--debug`)."""

from __future__ import annotations

import re

from wid.errors import ConfigError, StateCapError, WidError

_CAP = re.compile(r"((?:window state|distinct-value) cap hit: .*?)(?:\s+SQLSTATE.*)?$", re.M)
_SHARDS = re.compile(r"(this checkpoint's state was written with \d+ shards.*?)(?:\s+SQLSTATE.*)?$", re.M)


def translate(exc: BaseException, sql_field: str | None = None) -> WidError | None:
    """The wid error `exc` stands for, or None if it is not one a user caused.

    Cap violations raised inside Spark become StateCapError. With
    `sql_field`, analysis errors (unknown column, syntax) become ConfigError
    naming that field.
    """
    message = str(exc)
    match = _CAP.search(message)
    if match:
        return StateCapError(match.group(1).strip())
    shards = _SHARDS.search(message)
    if shards:
        return ConfigError("spark.wid.operator.shards", shards.group(1).strip())
    name = type(exc).__name__
    if sql_field and name in ("AnalysisException", "ParseException"):
        first = message.strip().splitlines()[0] if message.strip() else name
        return ConfigError(sql_field, first)
    return None
