"""Time zones as wid reads them: IANA names checked against Python's
`zoneinfo`, and a zone's UTC offsets as a table of transitions.

A zone's history is a sequence of *segments*: segment i runs from
``starts[i]`` (an instant, epoch microseconds; ``starts[0]`` is `FAR_PAST`)
to ``starts[i + 1]``, and in it the zone's wall clock is the instant plus
``offsets[i]`` microseconds. The table is read once per zone and process
from `zoneinfo` (the system's tz database, else the `tzdata` package) by
probing the offset every `PROBE_S` seconds from `FIRST_YEAR` to
`LAST_YEAR` and finding each change to the second by bisection; before
and after those years the first and last offsets hold. It is plain
integers, so that it ships to executors with a window's geometry
(`wid.semantics.calendar`), which never imports zoneinfo's data itself.

Spark's own functions (``from_utc_timestamp``, ``to_utc_timestamp``) read
the JVM's tz database instead; both follow the same rules where their
versions agree (keep ``tzdata`` and the JVM current together).
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from wid.errors import ConfigError

FIRST_YEAR, LAST_YEAR = 1800, 2400  # the years whose offsets the table holds
PROBE_S = 86_400  # two offset changes less than a day apart would be missed: none in the tz database of 1800-2400
FAR_PAST = -(1 << 62)  # the start of a zone's first segment, before any instant Spark holds
US = 1_000_000


@lru_cache(maxsize=1)
def zone_names() -> frozenset[str]:
    """Every IANA zone name `zoneinfo` knows."""
    return frozenset(available_timezones())


def check_zone(name: object, field: str = "time_zone") -> str:
    """`name` when it is a zone `zoneinfo` knows; else ConfigError naming
    `field` with the closest names (difflib over
    `zoneinfo.available_timezones()`)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(field, f"must be an IANA time zone name such as 'America/New_York', got {name!r}")
    if name not in zone_names():
        close = difflib.get_close_matches(name, sorted(zone_names()), n=3, cutoff=0.5)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else \
            "use an IANA name such as 'America/New_York' or 'UTC' (zoneinfo.available_timezones())"
        raise ConfigError(field, f"unknown time zone {name!r}", hint)
    return name


@lru_cache(maxsize=64)
def offsets(name: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(``starts``, ``offsets``) of zone `name`, epoch microseconds (see
    the module docstring). Raises ZoneInfoNotFoundError for an unknown
    name (`check_zone` first)."""
    zone = ZoneInfo(name)

    def offset_s(s: int) -> int:
        delta = datetime.fromtimestamp(s, zone).utcoffset()
        return 0 if delta is None else delta.days * 86_400 + delta.seconds

    s = int(datetime(FIRST_YEAR, 1, 1, tzinfo=UTC).timestamp())
    end = int(datetime(LAST_YEAR, 1, 1, tzinfo=UTC).timestamp())
    before = offset_s(s)
    starts, offs = [FAR_PAST], [before * US]
    while s < end:
        after = offset_s(s + PROBE_S)
        if after != before:
            lo, hi = s, s + PROBE_S  # offset_s(lo) == before != offset_s(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if offset_s(mid) == before else (lo, mid)
            starts.append(hi * US)
            offs.append(after * US)
            before = after
        s += PROBE_S
    return tuple(starts), tuple(offs)


def offset_at(name: str, us: int) -> int:
    """Zone `name`'s UTC offset at instant `us` (microseconds), from `offsets`."""
    starts, offs = offsets(name)
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if starts[mid] <= us else (lo, mid)
    return offs[lo]


def clock_misfit(name: str, step_us: int) -> int | None:
    """The first change of zone `name`'s offset at which windows of
    `step_us` on its local clock (`wid.semantics.calendar`: unit k holds the
    instants t with ``floor((t + (offset mod step)) / step) = k``) are not
    what Spark SQL computes from the offsets alone, or None. At a change
    from phase q to p (the offsets modulo the step) that is:

    - p < q: a unit before the change is later than the unit after it
      (the windows would not be intervals);
    - p > q: a unit starts at the change itself, inside ``(T + q, T + p)``,
      an instant no offset names;
    - another change less than a step later.

    Changes before 1970 (the tz database's own horizon of accuracy) are not
    judged: three zones changed their clocks off the minute then (Athens
    in 1916, Dominica and Montserrat in 1911), and at those changes batch
    plans may place a window's bound differently from the operator.
    """
    starts, offs = offsets(name)
    changes = list(zip(starts[1:], offs, offs[1:], strict=False))
    for i, (at, before, after) in enumerate(changes):
        if at < 0:
            continue
        q, p = before % step_us, after % step_us
        backwards = p < q and (at + p) // step_us < (at - 1 + q) // step_us
        unnamed = p > q and -(-(at + q + 1) // step_us) * step_us < at + p
        crowded = p != q and i + 1 < len(changes) and changes[i + 1][0] - at < step_us
        if backwards or unnamed or crowded:
            return at
    return None


def first_instant_of(name: str, us: int) -> int:
    """The first instant of the local date holding instant `us` in zone
    `name` (its local midnight; after a skipped midnight, the first instant
    that exists), from `zoneinfo`."""
    zone = ZoneInfo(name)
    day = datetime.fromtimestamp(us // US, zone).date()
    return int(datetime(day.year, day.month, day.day, tzinfo=zone).timestamp()) * US


__all__ = ["FAR_PAST", "FIRST_YEAR", "LAST_YEAR", "ZoneInfoNotFoundError", "check_zone", "clock_misfit",
           "first_instant_of", "offset_at", "offsets", "zone_names"]
