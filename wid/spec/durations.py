"""Durations and instants written the way Spark, Flink and Quix users write
them, beside wid's integer milliseconds.

Every ``*_ms`` key of a pipeline's TOML also takes its value under the key
without the suffix, as text: a duration as Spark's interval strings write it
(``duration = "1 hour"``, ``hop = "5 minutes"``, ``lateness = "1 minute 30
seconds"``; Spark's ``window(ts, "10 minutes")``), and the landmark, an
instant, as a timestamp (``landmark = "2013-01-01 00:00:00"``, UTC unless
it names an offset, or a TOML date-time). One of the two keys, never both.
In Python the ``*_ms`` fields also take a `datetime.timedelta` (an instant:
a `datetime.datetime`), as Quix Streams' ``duration_ms`` does, and text as
TOML writes it, under the same key without ``_ms``:
``Window(duration="5 minutes")`` (`text_keys`). A bare number there is
refused: its unit would be a guess (write ``duration_ms=300`` or
``duration="300 ms"``).

Units: ``microsecond``, ``millisecond`` (``ms``), ``second`` (``s``),
``minute`` (``min``), ``hour`` (``h``), ``day`` (``d``), ``week``, singular
or plural, case-insensitive, with an optional leading ``interval``. Months,
quarters and years have no fixed length: a window's span of them (``duration
= "1 month"``, ``"1 quarter"``, ``"1 year"``) goes to the field's months twin
(`MONTHS`: ``duration_months``; `written_field`), a calendar span
(`wid.spec.calendar`); anywhere else they are refused, as Spark refuses them
for a window. The sum must be a whole number of milliseconds. A guard whose Python
value None turns it off (`max_future_ms`) takes ``"off"`` as its text
(``max_future = "off"``).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from wid.errors import ConfigError

MS_PER_UNIT: dict[str, Decimal] = {
    "microsecond": Decimal("0.001"), "millisecond": Decimal(1), "ms": Decimal(1), "second": Decimal(1000),
    "s": Decimal(1000), "sec": Decimal(1000), "minute": Decimal(60_000), "min": Decimal(60_000),
    "hour": Decimal(3_600_000), "h": Decimal(3_600_000), "day": Decimal(86_400_000), "d": Decimal(86_400_000),
    "week": Decimal(604_800_000),
}
MONTHS_PER_UNIT = {"month": 1, "quarter": 3, "year": 12}
MONTHS = {"duration_ms": "duration_months", "hop_ms": "hop_months", "max_duration_ms": "max_duration_months"}
INSTANTS = ("landmark_ms",)  # epoch-ms fields that are points in time, not durations
OFF = "off"  # the text that turns off a guard whose Python value is None (``max_future = "off"``)
SWITCHABLE = ("max_future_ms",)  # fields that take OFF
_TERM = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)\s*([a-z]+)\s*", re.I)


def _unit(word: str) -> Decimal | None:
    word = word.lower()
    if word in MS_PER_UNIT:
        return MS_PER_UNIT[word]
    return MS_PER_UNIT.get(word[:-1]) if word.endswith("s") else None


def parse_duration_ms(text: str, field: str) -> int:
    """`text` (``"1 hour 30 minutes"``) in milliseconds. Raises
    ConfigError naming `field` for text Spark would not read as a fixed
    interval, or one that is not a whole number of milliseconds."""
    body = re.sub(r"^\s*interval\s+", "", text.strip(), flags=re.I)
    total, at = Decimal(0), 0
    while at < len(body):
        match = _TERM.match(body, at)
        unit = _unit(match.group(2)) if match else None
        if match is None or unit is None:
            raise ConfigError(field, f"cannot read {text!r} as a duration",
                              'write it as Spark does, e.g. "10 minutes", "1 hour 30 minutes", "500 milliseconds"')
        try:
            total += Decimal(match.group(1)) * unit
        except InvalidOperation as err:  # pragma: no cover - the pattern admits only numbers
            raise ConfigError(field, f"cannot read {text!r} as a duration") from err
        at = match.end()
    if at == 0:
        raise ConfigError(field, "is empty", 'write a duration, e.g. "10 minutes"')
    if total != total.to_integral_value():
        raise ConfigError(field, f"{text!r} is not a whole number of milliseconds")
    return int(total)


def parse_instant_ms(value: str | datetime, field: str) -> int:
    """An instant (``"2013-01-01 00:00:00"``, ISO 8601, UTC unless it names
    an offset; or a datetime) in epoch milliseconds. Raises ConfigError
    naming `field`."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ConfigError(field, f"cannot read {value!r} as a timestamp",
                              'write it as "2013-01-01 00:00:00" (UTC) or "2013-01-01T00:00:00+01:00"') from None
    if not isinstance(value, datetime):
        raise ConfigError(field, f"must be a timestamp, got {value!r}")
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    delta = aware - datetime(1970, 1, 1, tzinfo=UTC)
    return _whole_ms(delta, field)


def _whole_ms(delta: timedelta, field: str) -> int:
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if us % 1000:
        raise ConfigError(field, f"{delta} is not a whole number of milliseconds")
    return us // 1000


def as_ms(value: object, field: str) -> object:
    """A Python value of an ``*_ms`` field in milliseconds: a `timedelta`
    (an instant field: a `datetime`) converted, anything else unchanged
    (the field's own check judges it)."""
    if isinstance(value, datetime):
        return parse_instant_ms(value, field) if field in INSTANTS else value
    if isinstance(value, timedelta) and field not in INSTANTS:
        return _whole_ms(value, field)
    return value


def written_value(field: str, value: object, path: str) -> int | None:
    """The milliseconds of TOML key `field` without its ``_ms`` (``duration =
    "1 hour"``), for the ``*_ms`` field `field`; None for `OFF` where the
    field takes it (`SWITCHABLE`). Raises ConfigError naming `path` for a
    bare number (its unit would be a guess), with both ways to write it."""
    if field in SWITCHABLE and isinstance(value, str) and value.strip().lower() == OFF:
        return None
    if field in INSTANTS:
        if not isinstance(value, str | datetime):
            raise ConfigError(path, f"must be a timestamp, got {value!r}",
                              f'write {field}={value!r} (epoch ms) or {field[:-3]}="2024-05-01 00:00:00"',
                              f'write {field} = {value!r} (epoch ms) or {field[:-3]} = "2024-05-01 00:00:00"')
        return parse_instant_ms(value, path)
    if not isinstance(value, str):
        raise ConfigError(path, f"takes a duration as text, got {value!r}",
                          f'write {field}={value!r} or {field[:-3]}="{value} ms"',
                          f'write {field} = {value!r} or {field[:-3]} = "{value} ms"')
    return parse_duration_ms(value, path)


def parse_months(text: str) -> int | None:
    """The months of `text` when it is a whole number of months, quarters
    or years (``"1 month"``, ``"3 months"``, ``"1 quarter"``, ``"1
    year"``), else None."""
    match = re.fullmatch(r"\s*(?:interval\s+)?(\d+)\s*([a-z]+)\s*", text, re.I)
    if match is None:
        return None
    word = match.group(2).lower()
    unit = MONTHS_PER_UNIT.get(word, MONTHS_PER_UNIT.get(word[:-1]) if word.endswith("s") else None)
    return None if unit is None else int(match.group(1)) * unit


def written_field(field: str, value: object, path: str) -> tuple[str, int | None]:
    """The field and value a TOML key without its ``_ms`` gives for the
    ``*_ms`` field `field`: a span in months goes to the field's months twin
    (`MONTHS`); anything else as `written_value`. Raises ConfigError naming
    `path` for months where the field has no twin."""
    months = parse_months(value) if isinstance(value, str) else None
    if months is None:
        return field, written_value(field, value, path)
    if field not in MONTHS:
        raise ConfigError(path, f"{value!r}: months have no fixed length",
                          "write it in days, hours or smaller units")
    return MONTHS[field], months



def read_text_key(key: str, value: object, path: str | None = None) -> tuple[str, object, bool]:
    """What key `key` (an ``*_ms`` field's name without ``_ms``) given
    `value` sets: (the field, its value, whether the value is text to keep
    as written). Text as `written_field` reads it (months go to the months
    twin); a `timedelta` (an instant field: a `datetime`) to the ``*_ms``
    field as is; None leaves the field unset. Raises ConfigError naming
    `path` (default `key`) for a bare number, with both ways to write it."""
    name = f"{key}_ms"
    if value is None:
        return name, None, False
    if isinstance(value, timedelta) and name not in INSTANTS:
        return name, value, False
    if isinstance(value, str) or (isinstance(value, datetime) and name in INSTANTS):
        field, parsed = written_field(name, value, path or key)
        return field, parsed, True
    written_value(name, value, path or key)  # raises: a bare number, or an instant that is not one
    raise AssertionError("unreachable")  # pragma: no cover


def text_keys(init: Callable[..., None]) -> Callable[..., None]:
    """`init` (a dataclass's ``__init__``) taking each ``*_ms`` field also
    under its name without ``_ms``, as TOML does (`read_text_key`): text
    (``duration="5 minutes"``; ``duration="1 month"`` goes to the months
    twin), or a `timedelta` (an instant: a `datetime`). The object keeps
    the text as written (`text_forms`), so that a TOML dump writes it back
    so. Raises ConfigError naming the key when both are given (an ``*_ms``
    None counts as not given), when the text does not read, or for a bare
    number."""
    names = set(inspect.signature(init).parameters)

    @functools.wraps(init)
    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        forms = []
        for key in [k for k in kwargs if k not in names and f"{k}_ms" in names]:
            value = kwargs.pop(key)
            for twin in (f"{key}_ms", f"{key}_months"):
                if kwargs.get(twin) is not None:
                    raise ConfigError(key, f"is given twice, as {key} and {twin}", "keep one of them")
            name, parsed, keep = read_text_key(key, value)
            if keep:
                forms.append((key, value))
            kwargs[name] = parsed
        init(self, *args, **kwargs)
        if forms:
            object.__setattr__(self, "text_forms", tuple(forms))
    return __init__


__all__ = ["INSTANTS", "MONTHS", "MS_PER_UNIT", "OFF", "SWITCHABLE", "as_ms", "parse_duration_ms", "parse_instant_ms",
           "parse_months", "read_text_key", "text_keys", "written_field", "written_value"]
