"""Turning Spark exceptions a user can cause into wid errors with one clear
message (the JVM stack trace stays behind `--debug`), and naming the root
cause of any other failure in one line (`root_cause`; for a Spark that did
not start, from its log: `cause_in_log`).

The message of a failed stream nests its causes: Spark's error
(``[STREAM_FAILED]``), the foreachBatch writer's (``[FOREACH_BATCH_USER_
FUNCTION_ERROR]``, ``[PYTHON_EXCEPTION]`` on Spark Connect), the writer's
Python traceback, the JVM error a call in it raised and that error's chain
of ``Caused by:`` lines, then the query's description and plan (``===
Streaming Query ===``), which quote the user's SQL, not causes. Inner
causes come later in the text, so the root cause is the last one.
"""

from __future__ import annotations

import re

from wid import errors
from wid.errors import (
    ConfigError,
    MissingDependencyError,
    SinkError,
    SinkUnavailableError,
    StateCapError,
    WidError,
)

# A cap message, not its template (``%s`` for the window's bounds), which a plan printed in another
# error holds (`wid.spark.group_cap.enforce_group_cap`)
_CAP = re.compile(r"((?:window state|distinct-value) cap hit: (?:(?!%s).)*?)(?:\s+SQLSTATE.*)?$", re.M)
_SHARDS = re.compile(r"(this checkpoint's state was written with \d+ shards.*?)(?:\s+SQLSTATE.*)?$", re.M)
_LAYOUT = re.compile(r"(this checkpoint's state was written in layout \d+ of wid's operator.*?)(?:\s+SQLSTATE.*)?$", re.M)
_SINK = re.compile(r"(sink (?:error|unavailable): .*?)(?:\s+SQLSTATE.*)?$", re.M)
_QUERY = "\n=== Streaming Query ==="  # a stream's description and plan follow
_TRACEBACK = re.compile(r"^.*Traceback \(most recent call last\):\n(?:[ \t].*\n)*(\S.*)$", re.M)
_CAUSED_BY = re.compile(r"^Caused by: (.+)$", re.M)
_ERROR_CLASS = re.compile(r"(?:^|(?<=: ))(?=(\[[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*\] .*)$)", re.M)  # nested ones too
_SQLSTATE = re.compile(r"(?:\s*SQLSTATE: \w+)+\s*$")


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

    Cap violations raised inside Spark become StateCapError; a wid error
    raised in Python inside a stream (its foreachBatch writer, on the
    driver or a Spark Connect server) becomes that error
    (`raised_wid_error`). With
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
    layout = _LAYOUT.search(message)
    if layout:
        return ConfigError("stream.checkpoint", layout.group(1).strip())
    sink = _SINK.search(message)  # raised in a stream's foreachBatch, wrapped by Spark
    if sink:
        unavailable = sink.group(1).startswith("sink unavailable:")
        return (SinkUnavailableError if unavailable else SinkError)(sink.group(1).strip())
    raised = raised_wid_error(message)
    if raised is not None:
        return raised
    name = type(exc).__name__
    if sql_field and name in ("AnalysisException", "ParseException"):
        first = message.strip().splitlines()[0] if message.strip() else name
        return ConfigError(sql_field, first)
    return None


def _causes(message: str) -> list[tuple[int, str, str]]:
    """The causes `message` names, in the order they appear: (position,
    kind, text) with kind ``python`` (the exception line that ends a Python
    traceback), ``jvm`` (a ``Caused by:`` line) or ``spark`` (an error
    class and its message, ``[CLASS] message``). A stream's description and
    plan are left out."""
    text = message.split(_QUERY, 1)[0]
    found = [(m.start(1), "python", m.group(1)) for m in _TRACEBACK.finditer(text)]
    found += [(m.start(1), "jvm", m.group(1)) for m in _CAUSED_BY.finditer(text)]
    found += [(m.start(1), "spark", m.group(1)) for m in _ERROR_CLASS.finditer(text)]
    return sorted((at, kind, _SQLSTATE.sub("", line).strip()) for at, kind, line in found)


def root_cause(message: str) -> str | None:
    """The root cause of a failure, in one line, from its message text
    (a Spark exception's, a stream's, any text with Python tracebacks or
    JVM traces); None when it names none.

    The root cause is the innermost one, which comes last: the last
    ``Caused by:`` line of a JVM trace, the exception line that ends the
    last Python traceback (``sqlite3.OperationalError: database or disk is
    full``), or Spark's error class and message
    (``[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] ...``). A JVM
    cause under a Spark error class is shown with that error in brackets
    when it comes from outside Spark (``java.io.IOException: No space left
    on device ([CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT] ...)``); Spark's
    own exceptions under its error class only restate it, so the error
    class's message stands for them. ``SQLSTATE`` codes are dropped."""
    causes = _causes(message)
    if not causes:
        return None
    _, kind, cause = causes[-1]
    if kind != "jvm":
        return cause
    first = len(causes) - 1
    while first > 0 and causes[first - 1][1] == "jvm":
        first -= 1
    head = causes[first - 1] if first > 0 and causes[first - 1][1] == "spark" else None
    if head is None:
        return cause
    return head[2] if cause.startswith("org.apache.spark.") else f"{cause} ({head[2]})"


# Errors that say only that Spark did not start, whose cause is in Spark's log (the JVM's exit, a failed
# constructor of the driver's context)
_WRAPPERS = ("[JAVA_GATEWAY_EXITED]", "An error occurred while calling None.")
_LOG_ERROR = re.compile(r"^\S+ \S+ ERROR .*$", re.M)  # a log4j line at ERROR: what follows is its exception
_MAIN = re.compile(r'^Exception in thread "[^"]*" (.+)$', re.M)  # spark-submit's own failure (Ivy, arguments)
_JAVA = re.compile(r"^((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b(?::.*)?)$", re.M)
_UNRESOLVED = re.compile(r"unresolved dependency: ([\w.-]+)#([\w.-]+);([\w.-]+)")
# a Parquet timestamp in nanoseconds, as Spark refuses it: declared as TIMESTAMP, or read without a schema
_NANOS = re.compile(r"TIMESTAMP\(NANOS|Expected Spark type timestamp(?:_ntz)?, actual Parquet type INT64")
_IVY_SERVER = re.compile(r"Server access error at url \S+ \((.+)\)\s*$", re.M)


def says_nothing(cause: str | None) -> bool:
    """Whether a failure's `cause` (`root_cause`) only says that Spark did
    not start: its cause is then in Spark's log (`cause_in_log`)."""
    return cause is None or any(w in cause for w in _WRAPPERS)


def cause_in_log(log: str) -> str | None:
    """The root cause of a failed start-up in Spark's log text, in one line
    with its fix where wid knows one; None when the log names none.

    spark-submit's own failure (``Exception in thread "main" ...``: a
    package Ivy could not resolve, a bad argument) comes first; else the
    exception under the log's last ERROR line, or the innermost cause of
    its chain (`root_cause`). A package Ivy could not resolve is named in
    Maven's coordinates, with what Ivy met (connection refused...), and the
    fix."""
    main = _MAIN.findall(log)
    if main:
        return with_fix(main[-1].strip(), log)
    errors_at = [m.end() for m in _LOG_ERROR.finditer(log)]
    if not errors_at:
        return None
    tail = log[errors_at[-1]:]
    first = _JAVA.search(tail)
    return root_cause(tail) or (with_fix(first.group(1).strip(), log) if first else None)


def with_fix(cause: str, log: str = "") -> str:
    """`cause` (a root cause, one line) with its fix, for the failures whose
    fix wid knows: a package Spark cannot fetch (what Ivy met is in its
    `log`), a Parquet timestamp in nanoseconds."""
    if ". Fix: " in cause:
        return cause
    if _NANOS.search(cause):
        return (f"{cause}. Fix: the file stores its timestamps in nanoseconds, which Spark does not read as "
                "TIMESTAMP: write them in microseconds (pyarrow: pq.write_table(..., coerce_timestamps='us'); "
                "pandas: df.to_parquet(..., coerce_timestamps='us'))")
    missing = _UNRESOLVED.search(cause)
    if missing is None:
        return cause
    met = _IVY_SERVER.findall(log)
    why = f" ({met[0].strip()})" if met else ""
    coordinates = ":".join(missing.groups())
    return (f"Spark could not fetch the package {coordinates}{why}. Fix: let Spark reach Maven Central once "
            "(wid doctor --fetch-kafka fetches Spark's Kafka connector), or put the package's jars in "
            "[spark.conf] spark.jars")


def raised_wid_error(message: str) -> WidError | None:
    """The wid error a Python traceback in `message` ends with (the last
    one: ``wid.errors.ConfigError: target.url_env: ...``), rebuilt from its
    class and message; None when no traceback ends with one."""
    for _, kind, line in reversed(_causes(message)):
        name, _, text = line.partition(": ")
        if kind != "python" or not name.startswith("wid.errors."):
            continue
        found = getattr(errors, name.removeprefix("wid.errors."), None)
        if not (isinstance(found, type) and issubclass(found, WidError)):
            continue
        if found is ConfigError:
            field, _, rest = text.partition(": ")
            problem, _, fix = rest.partition(". Fix: ")
            return ConfigError(field, problem, fix or None)
        if found is MissingDependencyError:
            what, _, fix = text.partition(" is missing. Fix: ")
            return MissingDependencyError(what, fix)
        return found(text)
    return None
