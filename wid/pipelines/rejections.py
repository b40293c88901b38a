"""Loud rejections: a batch, or a micro-batch, that rejects more than a
share of its rows as bad input says so, with its first rejected value, the
reason and a fix.

Every rejected row goes to the dead letter with its reason, and the
summary counts them, but a run whose every row is rejected (event times
in a format Spark does not parse, say) still succeeds: nothing was lost.
Most often it is a configuration error, so above `DEFAULT_SHARE` of a
batch's rows (``wid run --rejected-above``) wid warns, and ``wid run
--strict`` makes it a failure (`STRICT_EXIT`) before anything of that
batch is written: a batch run's check comes before the target's write,
a stream's before the micro-batch's writes and its commit (`check`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from wid.errors import RejectedError
from wid.semantics import reasons

DEFAULT_SHARE = 0.5  # the share of a batch's rows above which its rejections are a warning
STRICT_EXIT = RejectedError.exit_code  # `wid run --strict`'s exit status when a batch rejected more than the share
_DATE = re.compile(r"(\d{1,4})([/.-])(\d{1,2})\2(\d{1,4})")
_TIME = re.compile(r"([ T])(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")


@dataclass(frozen=True)
class Rejections:
    """A batch (`batch_id` None: a batch run) or micro-batch that rejected
    `rejected` of its `rows` rows, and its first rejected row: `reason`
    and `row_json` (the row as the dead letter holds it)."""

    batch_id: int | None
    rows: int
    rejected: int
    reason: str
    row_json: str


def over(rows: int, rejected: int, share: float) -> bool:
    """Whether `rejected` of `rows` is more than `share` of them."""
    return rows > 0 and rejected > share * rows


def timestamp_pattern(text: str) -> str | None:
    """A Spark datetime pattern that reads `text` (``01/05/2024 09:01`` ->
    ``MM/dd/yyyy HH:mm``), for a date of day, month and a four-digit year
    (year first, or last: day first when the first number is above 12,
    else month first with ``/`` as in the US, day first with ``.`` or
    ``-``), optionally followed by a time; None for other text. Single
    letters where the value has single digits (``M/d/yyyy H:mm``)."""
    text = text.strip()
    date = _DATE.match(text)
    if date is None:
        return None
    a, sep, b, c = date.groups()
    rest = text[date.end():]
    time = _TIME.fullmatch(rest) if rest else None
    if rest and time is None:
        return None

    def width(letter: str, digits: str) -> str:
        return letter * 2 if len(digits) == 2 else letter
    if len(a) == 4:
        day = f"yyyy{sep}{width('M', b)}{sep}{width('d', c)}"
    elif len(c) == 4 and (int(a) > 12 or sep != "/") and int(b) <= 12:
        day = f"{width('d', a)}{sep}{width('M', b)}{sep}yyyy"
    elif len(c) == 4 and int(a) <= 12:
        day = f"{width('M', a)}{sep}{width('d', b)}{sep}yyyy"
    else:
        return None
    if time is None:
        return day
    at, hour, _, seconds, fraction = time.groups()
    clock = f"{width('H', hour)}:mm" + (":ss" if seconds else "") + (f".{'S' * len(fraction)}" if fraction else "")
    return day + (" " if at == " " else "'T'") + clock


def _value(row_json: str, column: str | None) -> Any:
    try:
        row = json.loads(row_json)
    except ValueError:
        return None
    return row.get(column) if isinstance(row, dict) and column else None


def _time_text(raw: str, column: str | None) -> str | None:
    """The text in a malformed record (`raw`: a JSON object, or a line of
    delimited fields) that `timestamp_pattern` reads: the time column's
    value, else the first field that looks like a date; None if none."""
    value = _value(raw, column)
    if isinstance(value, str) and timestamp_pattern(value):
        return value
    fields = re.split(r"[,;\t|]", raw)
    return next((f.strip().strip('"') for f in fields if timestamp_pattern(f.strip().strip('"'))), None)


def _parse_with(column: str | None, value: str) -> str:
    """The fix for a time `value` Spark did not parse: the to_timestamp
    pattern that reads it, in a [transform] sql pre-stage."""
    pattern = timestamp_pattern(value)
    how = f"to_timestamp({column}, '{pattern}')" if pattern else f"to_timestamp({column}, '<pattern>')"
    return (f"give its format: {how} in a [transform] sql pre-stage (Spark's datetime patterns)"
            + (", or swap MM and dd if the day comes first" if pattern and pattern[:1] == "M" else ""))


def fix(reason: str, row_json: str, time_column: str | None) -> str:
    """How to stop rows being rejected for `reason`, from the first such
    row (`row_json`; a malformed record's raw text) and the window's
    event-time column. A time Spark did not parse, as a text event time or
    inside a record the reader could not read against a TIMESTAMP schema,
    gets the ``to_timestamp`` pattern that reads it."""
    value = _value(row_json, time_column)
    if reason == reasons.UNPARSEABLE_EVENT_TIME and isinstance(value, str):
        return _parse_with(time_column, value)
    time_text = _time_text(row_json, time_column) if reason == reasons.MALFORMED else None
    if time_text is not None:
        column = time_column or "<column>"
        return (f"read {column} as text ({column} STRING in the source's schema), then "
                + _parse_with(column, time_text))
    if reason == reasons.NULL_EVENT_TIME:
        return (f"check that the source holds `{time_column}` under that name and that its schema and options "
                "(header, sep) read it")
    if reason == reasons.MALFORMED:
        return "check the source's schema and options (header, sep, the JSON's types) against its files"
    if reason in (reasons.IN_FUTURE, reasons.OUT_OF_RANGE):
        return "check event_time_unit (ms or us) against the values, or max_future_ms"
    if reason.startswith("not a number"):
        return "cast or clean the column in a [transform] sql pre-stage (try_cast)"
    if reason.startswith("null group key"):
        return "fill the key in a [transform] sql pre-stage (coalesce), or filter those rows"
    return "see the dead letter for the rows and their reasons"


def warning(r: Rejections, share: float, time_column: str | None, strict: bool = False) -> str:
    """One line: which batch rejected how many of its rows, above what
    share, its first rejected row's reason and value (`strict`: and that
    nothing of that batch was written), and the fix."""
    value = _value(r.row_json, time_column)
    shown = f"{time_column} = {json.dumps(value)}" if value is not None else f"row {r.row_json}"
    kept = f"; nothing of {_which(r)} was written (--strict)" if strict else ""
    return (f"{_which(r)} rejected {r.rejected:,} of its {r.rows:,} rows ({100 * r.rejected / r.rows:.0f} %, more than "
            f"{100 * share:g} %); the first: {shown}, {r.reason}{kept}. Fix: {fix(r.reason, r.row_json, time_column)}")


def check(r: Rejections, share: float, time_column: str | None) -> None:
    """Raise RejectedError (`warning`'s line, and that nothing of the batch
    was written) when `r` rejected more than `share` of its rows."""
    if over(r.rows, r.rejected, share):
        raise RejectedError(warning(r, share, time_column, strict=True))


def _which(r: Rejections) -> str:
    return "the batch" if r.batch_id is None else f"micro-batch {r.batch_id}"


__all__ = ["DEFAULT_SHARE", "STRICT_EXIT", "Rejections", "check", "fix", "over", "timestamp_pattern", "warning"]
