"""Time units. Inside wid, time is int64 microseconds since the Unix epoch,
UTC: integers make window arithmetic exact (no float rounding at window
edges) and microseconds are Spark's own timestamp resolution.

Division is floor division everywhere, so pre-1970 (negative) timestamps
land in the right window: Python's ``//`` floors, while Spark's ``%`` and
``div`` truncate toward zero (the Spark layer uses ``pmod``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

US_PER_MS = 1_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The instants Spark's TIMESTAMP holds, 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, in epoch
# microseconds: an event time outside them is bad input ("event time out of range"), never a failure.
MIN_US = -62_135_596_800_000_000
MAX_US = 253_402_300_799_999_999


def ms_to_us(ms: int) -> int:
    """Milliseconds to microseconds."""
    return ms * US_PER_MS


def now_us() -> int:
    """The clock now, in epoch microseconds."""
    return time.time_ns() // 1_000


def datetime_to_us(value: datetime) -> int:
    """A datetime to epoch microseconds; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def us_to_datetime(us: int) -> datetime:
    """Epoch microseconds to an aware UTC datetime."""
    return EPOCH + timedelta(microseconds=us)


def event_time_us(value: object, unit: str, zone: str | None = None) -> int | None:
    """An event-time value in `unit` (``timestamp``, ``ms``, ``us``) as epoch
    microseconds; None stays None. A naive datetime (a wall-clock time, as
    Spark's ``TIMESTAMP_NTZ``) is read in `zone` when one is given (a time
    in a gap moves forward by the gap, an ambiguous one is its first
    instant: ``fold = 0``, as Spark's ``to_utc_timestamp``), else as UTC.
    A text is an ISO-8601 time (`text_to_datetime`), read by the same rule
    when it has no offset; one that does not parse is None. Raises
    TypeError on a value of the wrong type for the unit."""
    if value is None:
        return None
    if unit == "timestamp":
        if isinstance(value, str):
            parsed = text_to_datetime(value)
            return None if parsed is None else event_time_us(parsed, unit, zone)
        if not isinstance(value, datetime):
            raise TypeError(f"event_time_unit 'timestamp' needs datetime values, got {value!r}")
        if zone is not None and value.tzinfo is None:
            value = value.replace(tzinfo=ZoneInfo(zone), fold=0)
        return datetime_to_us(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"event_time_unit '{unit}' needs integer values, got {value!r}")
    return value * US_PER_MS if unit == "ms" else value


def text_to_datetime(text: str) -> datetime | None:
    """An ISO-8601 date or time text (``2013-03-11``, ``2013-03-11
    02:30:00``, ``2013-03-11T02:30:00.5+05:45``, ``...Z``) as a datetime,
    naive when the text has no offset; None when it does not parse. The
    forms Spark's timestamp parser and Python's ``fromisoformat`` both read
    (Spark also reads a few more, such as single-digit fields and region
    names); the rule for a text without an offset is docs/semantics.md#time's."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def in_range(us: int) -> bool:
    """Whether epoch microseconds `us` lie within Spark's TIMESTAMP range
    (`MIN_US` to `MAX_US`, both included)."""
    return MIN_US <= us <= MAX_US


def in_future(us: int, now_us: int, max_future_ms: int | None) -> bool:
    """Whether event time `us` lies more than `max_future_ms` ahead of the
    processing time `now_us` (never without a `max_future_ms`)."""
    return max_future_ms is not None and us > now_us + ms_to_us(max_future_ms)


def format_us(us: int) -> str:
    """Epoch microseconds as an ISO-8601 UTC string ending in Z."""
    text = us_to_datetime(us).isoformat().replace("+00:00", "Z")
    return text
