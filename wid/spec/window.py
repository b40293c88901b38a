"""`Window`: the one declaration of a windowed aggregation (docs/semantics.md).

Time inside wid is int64 microseconds since the Unix epoch (UTC); spec fields
carry their unit in their name (`duration_ms`), and also take a
`datetime.timedelta` (`landmark_ms` a `datetime.datetime`) and Spark's
duration strings (``"5 minutes"``), under their name or without its
``_ms`` (``duration="5 minutes"``), as TOML does (`wid.spec.durations`). Every time window is
half-open, ``[start, end)``, aligned to the epoch plus `origin_ms`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from wid.errors import ConfigError
from wid.spec.aggregation import Aggregation
from wid.spec.durations import as_ms
from wid.spec.field_rules import check_fields, column, columns, not_negative, positive, text
from wid.spec.kinds import KINDS, Shape
from wid.spec.names import check_identifier, check_name, check_names
from wid.spec.parameters import (
    constructor_params,
    constructor_signature,
    register_window,
    route,
    window_signature,
)

WindowKind = str  # a kind's name: TOML's `kind`, a key of `wid.spec.kinds.KINDS`
# How far ahead of the processing time an event time may lie before its row is bad input ("event time in the
# future"): a clock error or a unit mistake one row deep would otherwise move the watermark past every later row.
# The default guards streams only: a batch has no watermark to move, and keeps future rows as Spark's window() does.
DEFAULT_MAX_FUTURE_MS = 86_400_000
STREAMS_DEFAULT: Literal["streams default"] = "streams default"  # max_future_ms unset: one day on a stream, off in batch
FINAL_COLUMN = "is_final"  # with emit = "on_update", says whether a row is the window's final value


@dataclass(frozen=True)
class Punctuation:
    """A punctuation: a row in the stream asserting "no more rows with
    ``ts < p`` for scope S" (Tucker et al.; docs/semantics.md#completeness).

    - `predicate`: a Spark SQL boolean expression that marks punctuation rows.
    - `scope`: key columns; empty means the punctuation advances its source's
      watermark, otherwise it closes that key's windows only.
    - `time_column`: the column holding p; defaults to the event time.

    Punctuation rows are never aggregated.
    """

    predicate: str
    scope: tuple[str, ...] = ()
    time_column: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.predicate, str) or not self.predicate.strip():
            raise ConfigError("predicate", "must be a non-empty Spark SQL boolean expression")
        object.__setattr__(self, "scope", check_names("scope", self.scope))
        if self.time_column is not None:
            check_name("time_column", self.time_column)


class _WindowType(type):
    """`Window`'s class: its per-kind constructors (``Window.tumbling(...)``),
    one per registered kind, named by the kind (`Shape.constructor`)."""

    def __getattr__(cls, name: str) -> Callable[..., Window]:
        for shape in KINDS.values():
            if shape.constructor == name and not name.startswith("_"):
                return _constructor(shape)
        raise AttributeError(f"type object 'Window' has no attribute {name!r}")

    def __dir__(cls) -> list[str]:
        return sorted({*super().__dir__(), *(shape.constructor for shape in KINDS.values())})


@dataclass(frozen=True, init=False)
class Window(metaclass=_WindowType):
    """A window specification: its kind's parameters (its `shape`), groups,
    aggregations, completeness and late-data policy.

    Kinds and their parameters (docs/semantics.md#window-kinds; each kind's
    shape in `wid.spec.kinds`):

    - ``tumbling``: `duration_ms`; window w is ``[o + w*d, o + (w+1)*d)``.
    - ``hopping``: `duration_ms`, `hop_ms` (<= duration); window w is
      ``[o + w*h, o + w*h + d)``.
    - ``session``: `gap_ms`, or `gap_column` (a per-row gap in milliseconds,
      as Spark's dynamic gap). A session is a maximal run of a group's rows
      where each next row starts no later than the running end
      ``max(ts + gap)``: a row exactly at the end joins, as in Spark's
      `session_window`.
    - ``count``: `size_rows`, `hop_rows` (default = size); window w holds the
      0-based ranks ``[max(0, (w+1)*hop - size), (w+1)*hop)`` of each
      `partition_by` partition; it is emitted once rank ``(w+1)*hop - 1``
      exists.
    - ``rolling``: `duration_ms`, optional `every_rows` n; one output row per
      input row t over the group's rows u with ``t.ts - d < u.ts <= t.ts``;
      with n, only every n-th row (by rank) opens an extent.
    - ``landmark``: `hop_ms`, `landmark_ms` (epoch ms), optional
      `max_duration_ms` (Flink CUMULATE); window w is
      ``[period start, L + (w+1)*h)``.

    Where o is `origin_ms`, d `duration_ms`, h `hop_ms`, L `landmark_ms`.
    A window is written ``Window(kind="tumbling", duration_ms=...)``, with
    its kind's constructor ``Window.tumbling(duration="5 minutes", ...)``,
    or with a shape ``Window(shape=TumblingWindows(...), ...)``. A kind's
    parameter reads off the window too (``window.duration_ms``).

    Calendar windows (tumbling, hopping, landmark; `wid.spec.calendar`):
    `time_zone` (an IANA name; default none: fixed durations aligned on the
    epoch, months in UTC) puts whole days on the zone's local calendar and
    other durations on its local clock; `duration_months`, `hop_months` and
    `max_duration_months` count local months (a quarter is 3, a year 12);
    `week_start` (default ``"monday"``) aligns whole weeks; bounds stay
    instants, and `window_label_column` adds the window's local name
    (``2013-03-10``, ``2013-W10``, ``2013-03``, ``2013-Q1``, ``2013``).

    Ranks (count windows, `every_rows`) follow `rank_by`:

    - ``"order"`` (default): 0-based positions in `order_by` order (default
      the event time), then `tie_breaker`, else every other input column. On
      a stream `order_by` must be the event time: a rank is final once the
      closing point passes the row (rows behind it are late).
    - ``"arrival"``: the paper's tuple-based windows over the stream as it
      arrives: rows of an earlier micro-batch rank before rows of a later
      one, and within a micro-batch rows rank in the order above (Spark
      guarantees no order inside a micro-batch; this one is deterministic on
      replay). A row's rank is final when it arrives, so no row is late. In
      batch the input is one arrival: ranks equal ``"order"`` ranks.

    Output columns: `window_start_column`, `window_end_column` (and
    `window_id_column` for count windows), then `group_by` columns (count
    windows: `partition_by` then `group_by`), then aggregation aliases in
    declared order. Rolling keeps every input column, then the aggregates.
    On a stream with ``emit = "on_update"`` a last column ``is_final``
    says whether the row is the window's final value.

    Completeness (docs/semantics.md#completeness): `lateness_ms`, `source_idleness_ms`,
    `max_future_ms` (a row whose event time lies more than this ahead of its micro-batch's processing
    time is rejected, "event time in the future", and moves no watermark; default one day on a stream and
    no guard in batch, None turns the guard off), `punctuation`, `late_data` (``drop``, ``dlq``, ``reopen`` with
    `allowed_lateness_ms`), `late_mode` (``generous`` or ``consistent``),
    `emit` (``on_close`` or ``on_update``) and the state caps
    `max_groups_per_window` (mandatory in streaming) and `on_state_cap`.

    Raises `wid.errors.ConfigError` at construction, naming the field and
    the fix, for any invalid or contradictory setting, and for a parameter
    no kind takes (with the closest one).
    """

    shape: Shape
    aggregations: tuple[Aggregation, ...] = ()
    event_time_column: str | None = column()
    event_time_unit: Literal["timestamp", "ms", "us"] = "timestamp"
    time_mode: Literal["event", "processing"] = "event"
    group_by: tuple[str, ...] = columns("Group columns: one output row per window and group.")
    lateness_ms: int = not_negative(0)
    source_idleness_ms: int | None = positive()
    # unset (STREAMS_DEFAULT): one day on a stream, no guard in batch (`future_guard_ms`); None: no guard
    max_future_ms: int | str | None = positive(STREAMS_DEFAULT, also=(STREAMS_DEFAULT,))
    late_data: Literal["drop", "dlq", "reopen"] = "drop"
    allowed_lateness_ms: int | None = not_negative()
    late_mode: Literal["generous", "consistent"] = "generous"
    emit: Literal["on_close", "on_update"] = "on_close"
    max_groups_per_window: int | None = positive()
    on_state_cap: Literal["fail"] = "fail"
    crash_recovery: Literal["checkpoint", "none"] = "checkpoint"
    punctuation: Punctuation | None = None
    window_start_column: str = text("window_start")
    window_end_column: str = text("window_end")
    window_id_column: str = text("window_id")
    # The text a common ``*_ms`` parameter was given as (``lateness = "1 minute"``), so that a dump writes it
    # back so (`wid.spec.toml_io`); a kind's are its shape's. Not part of the window's meaning.
    text_forms: tuple[tuple[str, object], ...] = field(default=(), init=False, compare=False, repr=False)

    def __init__(self, kind: WindowKind | None = None, **parameters: Any) -> None:
        shape, own, texts = route(kind, dict(parameters))
        for f in fields(self):
            if f.init:
                object.__setattr__(self, f.name, own.get(f.name, f.default))
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "text_forms", texts)
        self.__post_init__()

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name.endswith("_ms"):
                object.__setattr__(self, f.name, as_ms(getattr(self, f.name), f.name))
        aggs = self.aggregations
        if isinstance(aggs, Aggregation) or not isinstance(aggs, list | tuple):
            raise ConfigError("aggregations", "must be a list of Aggregation")
        object.__setattr__(self, "aggregations", tuple(aggs))
        _validate(self)

    def __getattr__(self, name: str) -> Any:
        """A parameter of the window's kind, read off the window (``window.duration_ms``)."""
        shape = self.__dict__.get("shape")
        if shape is not None and not name.startswith("_") and name in shape.fields:
            return getattr(shape, name)
        raise AttributeError(f"'Window' object has no attribute {name!r}")

    # -- derived views ---------------------------------------------------
    @property
    def kind(self) -> WindowKind:
        """The kind's name: TOML's `kind`, its shape's tag."""
        return self.shape.kind

    @property
    def key_columns(self) -> tuple[str, ...]:
        """Columns identifying a group: `partition_by` then `group_by`."""
        return self.shape.partition_by + self.group_by

    def future_guard_ms(self, streaming: bool) -> int | None:
        """The `max_future_ms` guard a run applies (ms), or None for none: as
        set, or unset one day on a stream and none in batch."""
        if self.max_future_ms == STREAMS_DEFAULT:
            return DEFAULT_MAX_FUTURE_MS if streaming else None
        return self.max_future_ms  # type: ignore[return-value]

    @property
    def output_prefix(self) -> tuple[str, ...]:
        """The window columns that precede the group columns in the output."""
        return self.shape.output_prefix(self)

    @property
    def closing_columns(self) -> tuple[str, ...]:
        """The columns a closing point (watermark or keyed punctuation)
        applies per: `partition_by` for count windows (ranks count per
        partition), else `group_by`."""
        return self.shape.closing_columns(self)

    @property
    def reemits(self) -> bool:
        """Whether, on a stream, a window may be emitted more than once:
        its partial values (``emit = "on_update"``) or its corrections
        (``late_data = "reopen"``), with retractions for a session that
        merges or moves its start. Its output is then a sequence of
        upserts (and deletes) on the natural key, not an append."""
        return self.emit == "on_update" or self.late_data == "reopen"

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """The input columns some aggregation reads as numbers (see
        `wid.spec.catalog.AggShape.numeric`), in order of first use."""
        cols = [c for a in self.aggregations if a.numeric for c in a.columns]
        return tuple(dict.fromkeys(cols))


register_window(Window)
Window.__signature__ = window_signature(Window)  # type: ignore[attr-defined]
_CONSTRUCTORS: dict[type[Shape], Callable[..., Window]] = {}


def _constructor(shape: type[Shape]) -> Callable[..., Window]:
    """``Window.<kind>(...)``: that kind's parameters (its positional ones
    by position too) and the fields every kind shares."""
    if shape not in _CONSTRUCTORS:
        def make(*args: Any, **given: Any) -> Window:
            return Window(kind=shape.kind, **constructor_params(shape, args, given))
        make.__name__ = make.__qualname__ = shape.constructor
        make.__doc__ = (f"{shape.__doc__}\n\nTakes the parameters of {shape.kind} windows and the fields every "
                        "kind shares; each ``*_ms`` also as text under its name without ``_ms``. Raises "
                        "ConfigError naming a field of another kind, and as `Window` does.")
        make.__signature__ = constructor_signature(shape, Window)  # type: ignore[attr-defined]
        _CONSTRUCTORS[shape] = make
    return _CONSTRUCTORS[shape]


def _validate(w: Window) -> None:
    if w.crash_recovery == "kafka_eos":  # type: ignore[comparison-overlap]
        raise ConfigError("crash_recovery", "kafka_eos is not a crash_recovery mode: Spark's Kafka writer has no "
                          "transactions, and exactly-once to Kafka is the Kafka sink's choice",
                          "keep crash_recovery = 'checkpoint' and set delivery = 'exactly-once' on the Kafka target "
                          "and dead letter (Kafka transactions, docs/how-to/kafka.md)")
    check_fields(w)
    w.shape.check_window(w)
    _validate_time(w)
    _validate_lateness(w)
    _validate_output_names(w)


def _validate_time(w: Window) -> None:
    if w.time_mode == "event":
        if w.event_time_column is None:
            raise ConfigError(
                "event_time_column", "time_mode = 'event' needs the event-time column",
                "set event_time_column, or time_mode = 'processing' to stamp arrival time",
            )
        check_name("event_time_column", w.event_time_column)
    elif w.event_time_column is not None:
        raise ConfigError(
            "event_time_column", "time_mode = 'processing' stamps arrival time itself",
            "remove event_time_column, or use time_mode = 'event'",
        )


def _validate_lateness(w: Window) -> None:
    if w.late_data == "reopen" and w.allowed_lateness_ms is None:
        raise ConfigError(
            "allowed_lateness_ms", "late_data = 'reopen' needs a budget for how long windows reopen",
            "set allowed_lateness_ms, e.g. 3600000 for one hour",
        )
    if w.late_data != "reopen" and w.allowed_lateness_ms is not None:
        raise ConfigError(
            "allowed_lateness_ms", "is only used with late_data = 'reopen'",
            "remove it, or set late_data = 'reopen'",
        )
    if w.punctuation is not None and not isinstance(w.punctuation, Punctuation):
        raise ConfigError("punctuation", "must be a Punctuation")
    if w.punctuation is not None:
        keys = w.closing_columns
        outside = [c for c in w.punctuation.scope if c not in keys]
        if outside:
            what = w.shape.closing_field
            raise ConfigError("punctuation.scope", f"column '{outside[0]}' is not in {what}"
                              f"{w.shape.closing_note}, so a keyed punctuation could not say which windows "
                              "it closes", f"use columns of {what}, or an empty scope")


def _validate_output_names(w: Window) -> None:
    if not w.aggregations:
        raise ConfigError("aggregations", "a window needs at least one aggregation",
                          'give aggregations=[Aggregation("count", as_="n")]',
                          "add [[transform.window.aggregations]] with agg and as")
    for name in ("window_start_column", "window_end_column", "window_id_column"):
        check_identifier(name, getattr(w, name))
    taken: dict[str, str] = {}
    for name in w.output_prefix:
        if name in taken:
            raise ConfigError("window_label_column" if name == w.shape.window_label_column else "window_end_column",
                              f"column '{name}' names two window columns", "give each window column its own name")
        taken[name] = "a window column"
    if w.emit == "on_update":
        taken[FINAL_COLUMN] = "the final flag of emit = 'on_update'"
    for col in w.key_columns:
        if col in taken:
            raise ConfigError("group_by", f"column '{col}' collides with {taken[col]}",
                              "rename the window column or the group column")
        taken[col] = "a group column"
    for i, agg in enumerate(w.aggregations):
        if not isinstance(agg, Aggregation):
            raise ConfigError(f"aggregations[{i}]", "must be an Aggregation")
        if agg.as_ in taken:
            raise ConfigError(
                f"aggregations[{i}].as",
                f"alias '{agg.as_}' collides with {taken[agg.as_]}",
                "choose a distinct alias",
            )
        taken[agg.as_] = f"the alias of aggregations[{i}]"
