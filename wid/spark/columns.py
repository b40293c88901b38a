"""Internal column names and small expression helpers for the Spark plans.

Internal columns start with ``_wid_``; input columns with that prefix are
refused up front, so they never collide.

The window arithmetic and the input checks are built as SQL text and parsed
once per expression (`sql`, `Exact`): PySpark builds a Column function by
function, each a round trip from the driver to the JVM and another to free
it, and a windowed aggregate's plan has dozens of them
(benchmarks/RESULTS.md, "overhead").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

# re-exported for the plans: a source column, and Spark SQL's quoting
from wid.spec.pipeline import CORRUPT as CORRUPT
from wid.spec.sql_text import ident as ident
from wid.spec.sql_text import sql_string as sql_string
from wid.spec.window import Window

PREFIX = "_wid_"
TS = "_wid_ts"          # event time, epoch microseconds (long)
REASON = "_wid_reason"  # why a row is rejected (null for good rows)
PANE = "_wid_pane"      # pane index
WINDOW_ID = "_wid_window_id"          # window id
RANK = "_wid_rank"      # 0-based rank (count and rolling windows)


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


def sql(text: str) -> Column:
    """A Column parsed from SQL expression `text` (``expr AS name`` names
    it): one call into the JVM, where a Column built function by function
    costs the driver two or more round trips per function (one to build
    each intermediate Column, one to free it). The plans build their
    arithmetic and input checks as text for that reason."""
    return F.expr(text)


@dataclass(frozen=True)
class Exact:
    """A long SQL expression (`sql` text) with Python's integer operators,
    ``//`` flooring as for ints (``div(x - pmod(x, d), d)``, exact on
    longs), so that the window arithmetic written once in
    `wid.semantics.windowing` builds Spark expressions too:
    ``Hopping(d, h).last_window_starting_by(exact(TS)).col``.

    The text becomes a Column once, in `col` (see `sql`). An int operand
    goes in as a BIGINT literal, so the arithmetic is on longs whatever the
    column's integer type (a rank is an INT). Adding 0, or multiplying or
    dividing by 1, builds nothing: the expression keeps its own type."""

    text: str

    @property
    def col(self) -> Column:
        """The expression as a Column."""
        return sql(self.text)

    def __add__(self, other: Exact | int) -> Exact:
        return self if _is(other, 0) else Exact(f"({self.text} + {_operand(other)})")

    __radd__ = __add__

    def __sub__(self, other: Exact | int) -> Exact:
        return self if _is(other, 0) else Exact(f"({self.text} - {_operand(other)})")

    def __rsub__(self, other: int) -> Exact:
        return Exact(f"({other}L - {self.text})")

    def __mul__(self, other: Exact | int) -> Exact:
        return self if _is(other, 1) else Exact(f"({self.text} * {_operand(other)})")

    __rmul__ = __mul__

    def __neg__(self) -> Exact:
        return Exact(f"(- {self.text})")

    def __floordiv__(self, divisor: int) -> Exact:
        if divisor <= 0:
            raise ValueError(f"divisor must be positive, got {divisor}")
        if divisor == 1:
            return self
        return Exact(f"div({self.text} - pmod({self.text}, {divisor}L), {divisor}L)")


def _is(value: Exact | int, n: int) -> bool:
    return isinstance(value, int) and value == n


def _operand(value: Exact | int) -> str:
    if isinstance(value, Exact):
        return value.text
    return f"({value}L)" if value < 0 else f"{value}L"


def exact(name: str) -> Exact:
    """Long column `name` for `wid.semantics.windowing`'s arithmetic."""
    return Exact(ident(name))


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


def wall_clock_us(ntz: str) -> str:
    """SQL text: the ``TIMESTAMP_NTZ`` expression `ntz` as its wall clock
    read as UTC, in epoch microseconds, from its calendar fields: no session
    time zone takes part (casting to TIMESTAMP, or ``timestamp_diff``, would
    read the wall clock in the session's zone and move times in a
    daylight-saving gap). The seconds are a decimal with their fraction."""
    return (f"(CAST(unix_date(CAST({ntz} AS DATE)) AS BIGINT) * {DAY_US} + CAST(hour({ntz}) AS BIGINT) * {HOUR_US}"
            f" + CAST(minute({ntz}) AS BIGINT) * {MINUTE_US} + CAST(extract(SECOND FROM {ntz}) * 1000000 AS BIGINT))")


def timestamp_ntz_us(us: Exact) -> str:
    """SQL text: epoch microseconds `us` as the ``TIMESTAMP_NTZ`` whose wall
    clock (read as UTC) they are: the inverse of `wall_clock_us`."""
    days = us // DAY_US
    rest = us - days * DAY_US
    date = f"date_from_unix_date(CAST({days.text} AS INT))"
    seconds = f"CAST(CAST(pmod({rest.text}, {MINUTE_US}L) AS DECIMAL(20,0)) / 1000000 AS DECIMAL(16,6))"
    hour = f"CAST({(rest // HOUR_US).text} AS INT)"
    minute = f"CAST({(Exact(f'pmod({rest.text}, {HOUR_US}L)') // MINUTE_US).text} AS INT)"
    return f"make_timestamp_ntz(year({date}), month({date}), dayofmonth({date}), {hour}, {minute}, {seconds})"


def as_wall_clock(df: DataFrame, names: tuple[str, ...], zone: str | None = None,
                  columns: Sequence[str] | None = None) -> DataFrame:
    """`df` with the TIMESTAMP columns `names` (instants whose UTC reading
    is a wall clock; with a `zone`, instants read on that zone's wall clock)
    as ``TIMESTAMP_NTZ`` wall-clock times; those of `names` not in `df` are
    skipped (`columns`: `df`'s, when the caller knows them, so that Spark
    need not analyse `df` to say)."""
    def wall_us(n: str) -> Exact:
        return Exact(f"unix_micros({ident(n)})" if zone is None else
                     f"unix_micros(from_utc_timestamp({ident(n)}, {sql_string(zone)}))")
    present = df.columns if columns is None else columns
    wall = {n: sql(timestamp_ntz_us(wall_us(n))) for n in names if n in present}
    return df.withColumns(wall) if wall else df  # Spark Connect refuses an empty map


def wall_clock(df: DataFrame, window: Window) -> bool:
    """True when `window`'s event time is a ``TIMESTAMP_NTZ`` column of
    `df`: its bounds are then wall-clock times of that type."""
    name = window.event_time_column
    return (window.time_mode == "event" and window.event_time_unit == "timestamp" and name is not None
            and name in df.columns and isinstance(df.schema[name].dataType, T.TimestampNTZType))
