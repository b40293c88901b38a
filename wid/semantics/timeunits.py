"""Time units. Inside wid, time is int64 microseconds since the Unix epoch,
UTC: integers make window arithmetic exact (no float rounding at window
edges) and microseconds are Spark's own timestamp resolution.

Division is floor division everywhere, so pre-1970 (negative) timestamps
land in the right window: Python's ``//`` floors, while Spark's ``%`` and
``div`` truncate toward zero (the Spark layer uses ``pmod``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

US_PER_MS = 1_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_to_us(ms: int) -> int:
    """Milliseconds to microseconds."""
    return ms * US_PER_MS


def datetime_to_us(value: datetime) -> int:
    """A datetime to epoch microseconds; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def us_to_datetime(us: int) -> datetime:
    """Epoch microseconds to an aware UTC datetime."""
    return EPOCH + timedelta(microseconds=us)


def event_time_us(value: object, unit: str) -> int | None:
    """An event-time value in `unit` (``timestamp``, ``ms``, ``us``) as epoch
    microseconds; None stays None. Raises TypeError on a value of the wrong
    type for the unit."""
    if value is None:
        return None
    if unit == "timestamp":
        if not isinstance(value, datetime):
            raise TypeError(f"event_time_unit 'timestamp' needs datetime values, got {value!r}")
        return datetime_to_us(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"event_time_unit '{unit}' needs integer values, got {value!r}")
    return value * US_PER_MS if unit == "ms" else value


def format_us(us: int) -> str:
    """Epoch microseconds as an ISO-8601 UTC string ending in Z."""
    text = us_to_datetime(us).isoformat().replace("+00:00", "Z")
    return text
