"""Internal column names and small expression helpers for the Spark plans.

Internal columns start with ``_wid_``; input columns with that prefix are
refused up front, so they never collide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

PREFIX = "_wid_"
TS = "_wid_ts"          # event time, epoch microseconds (long)
REASON = "_wid_reason"  # why a row is rejected (null for good rows)
PANE = "_wid_pane"      # pane index
WINDOW_ID = "_wid_window_id"          # window id
RANK = "_wid_rank"      # 0-based rank (count and rolling windows)
CORRUPT = "_wid_corrupt"  # the raw text of a record a file reader could not parse


def field(i: int, name: str, stage: str = "p") -> str:
    """The column of field `name` of aggregation i at `stage` (``p`` pane
    partial, ``r`` row value, ``pre``/``suf`` running, ``c`` contribution,
    ``m`` merged, ``f`` over a window function's frame)."""
    return f"_wid_{stage}{i}_{name}"


def getter(i: int, stage: str = "p") -> Callable[[str], Column]:
    """Field `name` of aggregation i at `stage` (`field`), as a column."""
    return lambda name: F.col(field(i, name, stage))


def lit_long(value: int) -> Column:
    """A bigint literal (Spark would type small ints as int)."""
    return F.lit(value).cast("long")


def floor_div(col: Column, divisor: int) -> Column:
    """``floor(col / divisor)`` for a positive integer divisor, exact on longs
    (Spark's ``div`` truncates toward zero; ``pmod`` is never negative)."""
    if divisor <= 0:
        raise ValueError(f"divisor must be positive, got {divisor}")
    if divisor == 1:
        return col.cast("long")
    d = lit_long(divisor)
    return F.call_function("div", col - F.pmod(col, d), d)


@dataclass(frozen=True)
class Exact:
    """A long Column with Python's integer operators, ``//`` flooring as
    for ints (`floor_div`), so that the window arithmetic written once in
    `wid.semantics.windowing` builds Spark expressions too:
    ``Hopping(d, h).last_window_starting_by(Exact(ts)).col``.

    An int operand goes to Spark as it is (Spark widens it to the long
    column's type) and adding 0 or multiplying by 1 builds nothing: each
    Column a plan builds costs the driver round trips to the JVM."""

    col: Column

    def __add__(self, other: Exact | int) -> Exact:
        return self if _is(other, 0) else Exact(self.col + _operand(other))

    __radd__ = __add__

    def __sub__(self, other: Exact | int) -> Exact:
        return self if _is(other, 0) else Exact(self.col - _operand(other))

    def __rsub__(self, other: int) -> Exact:
        return Exact(lit_long(other) - self.col)

    def __mul__(self, other: Exact | int) -> Exact:
        return self if _is(other, 1) else Exact(self.col * _operand(other))

    __rmul__ = __mul__

    def __neg__(self) -> Exact:
        return Exact(-self.col)

    def __floordiv__(self, divisor: int) -> Exact:
        return Exact(floor_div(self.col, divisor))


def _is(value: Exact | int, n: int) -> bool:
    return isinstance(value, int) and value == n


def _operand(value: Exact | int) -> Column | int:
    return value.col if isinstance(value, Exact) else value


def exact(col: Column | str) -> Exact:
    """`col` (a long Column or a column name) for `wid.semantics.windowing`'s
    arithmetic."""
    return Exact(F.col(col) if isinstance(col, str) else col)


def timestamp_us(col: Column) -> Column:
    """Epoch microseconds to a Spark TimestampType (UTC)."""
    return F.timestamp_micros(col)


def long_range(lo: Column, hi: Column) -> Column:
    """The array ``[lo, lo+1, ..., hi]``, or an empty array when ``lo > hi``
    (Spark's `sequence` would count down instead)."""
    return F.when(lo <= hi, F.sequence(lo, hi)).otherwise(F.array().cast("array<bigint>"))


DAY_US = 86_400_000_000
HOUR_US = 3_600_000_000
MINUTE_US = 60_000_000


def wall_clock_us(ntz: Column) -> Column:
    """A ``TIMESTAMP_NTZ`` as its wall clock read as UTC, in epoch
    microseconds, from its calendar fields: no session time zone takes part
    (casting to TIMESTAMP, or ``timestamp_diff``, would read the wall clock
    in the session's zone and move times in a daylight-saving gap)."""
    seconds = F.extract(F.lit("SECOND"), ntz)  # decimal: seconds with their fraction
    return (F.unix_date(ntz.cast("date")).cast("long") * lit_long(DAY_US) + F.hour(ntz).cast("long") * HOUR_US
            + F.minute(ntz).cast("long") * MINUTE_US + (seconds * 1_000_000).cast("long"))


def timestamp_ntz_us(us: Column) -> Column:
    """Epoch microseconds as the ``TIMESTAMP_NTZ`` whose wall clock (read as
    UTC) they are: the inverse of `wall_clock_us`."""
    days = floor_div(us, DAY_US)
    rest = us - days * lit_long(DAY_US)
    date = F.date_from_unix_date(days.cast("int"))
    seconds = (F.pmod(rest, lit_long(MINUTE_US)).cast("decimal(20,0)") / 1_000_000).cast("decimal(16,6)")
    return F.make_timestamp_ntz(F.year(date), F.month(date), F.dayofmonth(date),
                                floor_div(rest, HOUR_US).cast("int"),
                                floor_div(F.pmod(rest, lit_long(HOUR_US)), MINUTE_US).cast("int"), seconds)


def as_wall_clock(df: DataFrame, names: tuple[str, ...]) -> DataFrame:
    """`df` with the TIMESTAMP columns `names` (instants whose UTC reading
    is a wall clock) as ``TIMESTAMP_NTZ`` wall-clock times."""
    wall = {n: timestamp_ntz_us(F.unix_micros(F.col(n))) for n in names if n in df.columns}
    return df.withColumns(wall) if wall else df  # Spark Connect refuses an empty map
