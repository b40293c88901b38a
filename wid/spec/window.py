"""`Window`: the one declaration of a windowed aggregation (docs/semantics.md).

Time inside wid is int64 microseconds since the Unix epoch (UTC); spec fields
carry their unit in their name (`duration_ms`), and also take a
`datetime.timedelta` (`landmark_ms` a `datetime.datetime`) and Spark's
duration strings (``"5 minutes"``), under their name or without its
``_ms`` (``duration="5 minutes"``), as TOML does (`wid.spec.durations`). Every time window is
half-open, ``[start, end)``, aligned to the epoch plus `origin_ms`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from wid.errors import ConfigError
from wid.spec.aggregation import Aggregation
from wid.spec.durations import as_ms, text_keys
from wid.spec.kinds import KIND_FIELDS, NAMES, Kind, kinds_taking
from wid.spec.kinds import KINDS as DEFINITIONS
from wid.spec.names import check_identifier, check_name, check_names

WindowKind = Literal["tumbling", "hopping", "session", "count", "rolling", "landmark"]
KINDS: tuple[str, ...] = NAMES  # in wid.spec.kinds, one definition each
# How far ahead of the processing time an event time may lie before its row is bad input ("event time in the
# future"): a clock error or a unit mistake one row deep would otherwise move the watermark past every later row.
# The default guards streams only: a batch has no watermark to move, and keeps future rows as Spark's window() does.
DEFAULT_MAX_FUTURE_MS = 86_400_000
STREAMS_DEFAULT: Literal["streams default"] = "streams default"  # max_future_ms unset: one day on a stream, off in batch
FINAL_COLUMN = "is_final"  # with emit = "on_update", says whether a row is the window's final value
_CHOICES: dict[str, tuple[str, ...]] = {
    "event_time_unit": ("timestamp", "ms", "us"),
    "time_mode": ("event", "processing"),
    "late_data": ("drop", "dlq", "reopen"),
    "late_mode": ("generous", "consistent"),
    "emit": ("on_close", "on_update"),
    "on_state_cap": ("fail",),
    "crash_recovery": ("checkpoint", "none"),
    "rank_by": ("order", "arrival"),
}


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


@dataclass(frozen=True)
class Window:
    """A window specification: kind, extent parameters, groups, aggregations,
    completeness and late-data policy.

    Kinds and their parameters (docs/semantics.md#window-kinds):

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
    the fix, for any invalid or contradictory setting.
    """

    kind: WindowKind
    aggregations: tuple[Aggregation, ...] = ()
    event_time_column: str | None = None
    event_time_unit: Literal["timestamp", "ms", "us"] = "timestamp"
    time_mode: Literal["event", "processing"] = "event"
    duration_ms: int | None = None
    hop_ms: int | None = None
    origin_ms: int = 0
    gap_ms: int | None = None
    gap_column: str | None = None
    size_rows: int | None = None
    hop_rows: int | None = None
    every_rows: int | None = None
    landmark_ms: int | None = None
    max_duration_ms: int | None = None
    duration_months: int | None = None
    hop_months: int | None = None
    max_duration_months: int | None = None
    time_zone: str | None = None
    week_start: str = "monday"
    group_by: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    order_by: str | None = None
    tie_breaker: str | None = None
    lateness_ms: int = 0
    source_idleness_ms: int | None = None
    max_future_ms: int | Literal["streams default"] | None = STREAMS_DEFAULT
    late_data: Literal["drop", "dlq", "reopen"] = "drop"
    allowed_lateness_ms: int | None = None
    late_mode: Literal["generous", "consistent"] = "generous"
    emit: Literal["on_close", "on_update"] = "on_close"
    max_groups_per_window: int | None = None
    on_state_cap: Literal["fail"] = "fail"
    crash_recovery: Literal["checkpoint", "none"] = "checkpoint"
    punctuation: Punctuation | None = None
    window_start_column: str = "window_start"
    window_end_column: str = "window_end"
    window_id_column: str = "window_id"
    window_label_column: str | None = None
    rank_by: Literal["order", "arrival"] = "order"
    # The ``*_ms`` keys a TOML file gave as text (``duration = "1 hour"``), so that a dump writes them back so
    # (`wid.spec.toml_io`); not part of the window's meaning.
    written: tuple[tuple[str, object], ...] = field(default=(), init=False, compare=False, repr=False)

    # -- one constructor per kind: it takes that kind's fields, and the fields every kind shares --------------
    @classmethod
    def tumbling(cls, duration_ms: Any = None, *, duration_months: int | None = None, origin_ms: Any = None,
                 **common: Any) -> Window:
        """Tumbling windows of `duration_ms` d aligned to `origin_ms` o: window
        w is ``[o + w*d, o + (w+1)*d)``; or of `duration_months`, or on the
        calendar of a `time_zone` (`wid.spec.calendar`). `common`: the
        fields every kind shares (`event_time_column`, `group_by`,
        `aggregations`, `lateness_ms`...) and the calendar's (`time_zone`,
        `week_start`, `window_label_column`). Each ``*_ms`` also takes text
        under its name without ``_ms``: ``Window.tumbling(duration="5
        minutes")``, ``duration="1 month"``. Raises ConfigError naming a
        field of another kind, and as `Window` does."""
        return cls._of("tumbling", {"duration_ms": duration_ms, "duration_months": duration_months,
                                    "origin_ms": origin_ms}, common)

    @classmethod
    def hopping(cls, duration_ms: Any = None, hop_ms: Any = None, *, duration_months: int | None = None,
                hop_months: int | None = None, origin_ms: Any = None, **common: Any) -> Window:
        """Hopping windows: window w is ``[o + w*h, o + w*h + d)``, h =
        `hop_ms` <= d = `duration_ms` (or in months); `common` as for
        `tumbling`."""
        return cls._of("hopping", {"duration_ms": duration_ms, "hop_ms": hop_ms, "duration_months": duration_months,
                                   "hop_months": hop_months, "origin_ms": origin_ms}, common)

    @classmethod
    def session(cls, gap_ms: Any = None, *, gap_column: str | None = None, **common: Any) -> Window:
        """Session windows split where a group's next row comes more than
        `gap_ms` (or its row's `gap_column`, ms) after the running end;
        `common` as for `tumbling`."""
        return cls._of("session", {"gap_ms": gap_ms, "gap_column": gap_column}, common)

    @classmethod
    def count(cls, size_rows: int, *, hop_rows: int | None = None, partition_by: Sequence[str] = (),
              order_by: str | None = None, tie_breaker: str | None = None, rank_by: str = "order",
              **common: Any) -> Window:
        """Count windows of `size_rows` ranks every `hop_rows` (default: size)
        per `partition_by` partition, ranked by `order_by` (default the event
        time), `tie_breaker`, `rank_by`; `common` as for `tumbling`."""
        return cls._of("count", {"size_rows": size_rows, "hop_rows": hop_rows, "partition_by": partition_by,
                                 "order_by": order_by, "tie_breaker": tie_breaker, "rank_by": rank_by}, common)

    @classmethod
    def rolling(cls, duration_ms: Any = None, *, every_rows: int | None = None, order_by: str | None = None,
                tie_breaker: str | None = None, rank_by: str = "order", **common: Any) -> Window:
        """One window per input row t over its group's rows u with ``t.ts -
        d < u.ts <= t.ts`` (every `every_rows`-th row, by rank, with it);
        `common` as for `tumbling`."""
        return cls._of("rolling", {"duration_ms": duration_ms, "every_rows": every_rows, "order_by": order_by,
                                   "tie_breaker": tie_breaker, "rank_by": rank_by}, common)

    @classmethod
    def landmark(cls, hop_ms: Any = None, landmark_ms: Any = None, *, max_duration_ms: Any = None,
                 hop_months: int | None = None, max_duration_months: int | None = None, **common: Any) -> Window:
        """Landmark windows ``[L, L + (w+1)*h)`` from `landmark_ms` L growing
        by `hop_ms` h, restarting every `max_duration_ms` (Flink's CUMULATE;
        both may be in months); `common` as for `tumbling`."""
        return cls._of("landmark", {"hop_ms": hop_ms, "landmark_ms": landmark_ms, "max_duration_ms": max_duration_ms,
                                    "hop_months": hop_months, "max_duration_months": max_duration_months}, common)

    @classmethod
    def _of(cls, kind: str, own: dict[str, Any], common: dict[str, Any]) -> Window:
        """A `kind` window from its `own` fields (those None left to their
        defaults, or given as text in `common`) and the `common` ones, which
        may hold no field of another kind."""
        for name in common:
            if name == "kind" or (name in KIND_FIELDS and name not in DEFINITIONS[kind].fields):
                owners = ", ".join(kinds_taking(name)) or "no kind: the constructor names it"
                raise ConfigError(name, f"is not a field of {kind} windows (it is one of {owners})",
                                  f"Window.{kind}() takes {', '.join(own)} and the fields every kind shares")
        given = {k: v for k, v in own.items() if v is not None}
        return cls(kind=kind, **given, **common)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name.endswith("_ms"):
                object.__setattr__(self, f.name, as_ms(getattr(self, f.name), f.name))
        for name in ("group_by", "partition_by"):
            object.__setattr__(self, name, check_names(name, getattr(self, name)))
        aggs = self.aggregations
        if isinstance(aggs, Aggregation) or not isinstance(aggs, list | tuple):
            raise ConfigError("aggregations", "must be a list of Aggregation")
        object.__setattr__(self, "aggregations", tuple(aggs))
        _validate(self)

    # -- derived views ---------------------------------------------------
    @property
    def key_columns(self) -> tuple[str, ...]:
        """Columns identifying a group: `partition_by` then `group_by`."""
        return self.partition_by + self.group_by

    def future_guard_ms(self, streaming: bool) -> int | None:
        """The `max_future_ms` guard a run applies (ms), or None for none: as
        set, or unset one day on a stream and none in batch."""
        if self.max_future_ms == STREAMS_DEFAULT:
            return DEFAULT_MAX_FUTURE_MS if streaming else None
        return self.max_future_ms

    @property
    def definition(self) -> Kind:
        """The definition of this window's kind (`wid.spec.kinds`)."""
        return DEFINITIONS[self.kind]

    @property
    def output_prefix(self) -> tuple[str, ...]:
        """The window columns that precede the group columns in the output."""
        return self.definition.output_prefix(self)

    @property
    def closing_columns(self) -> tuple[str, ...]:
        """The columns a closing point (watermark or keyed punctuation)
        applies per: `partition_by` for count windows (ranks count per
        partition), else `group_by`."""
        return self.definition.closing_columns(self)

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

    @property
    def hop_rows_or_size(self) -> int:
        """`hop_rows`, defaulting to `size_rows` (count windows only)."""
        if self.size_rows is None:
            raise ConfigError("size_rows", f"kind = '{self.kind}' has no row count")
        return self.hop_rows if self.hop_rows is not None else self.size_rows


# Each ``*_ms`` field also under its name without ``_ms``, as in TOML: Window(duration="5 minutes")
Window.__init__ = text_keys(Window.__init__)  # type: ignore[method-assign]


def _default(name: str) -> Any:
    for f in fields(Window):
        if f.name == name:
            return f.default
    raise KeyError(name)


def _validate(w: Window) -> None:
    if w.kind not in DEFINITIONS:
        raise ConfigError("kind", f"unknown window kind {w.kind!r}", "use one of " + ", ".join(NAMES))
    if w.crash_recovery == "kafka_eos":  # type: ignore[comparison-overlap]
        raise ConfigError("crash_recovery", "kafka_eos is not a crash_recovery mode: Spark's Kafka writer has no "
                          "transactions, and exactly-once to Kafka is the Kafka sink's choice",
                          "keep crash_recovery = 'checkpoint' and set delivery = 'exactly-once' on the Kafka target "
                          "and dead letter (Kafka transactions, docs/how-to/kafka.md)")
    for name, choices in _CHOICES.items():
        if getattr(w, name) not in choices:
            raise ConfigError(name, f"must be one of {', '.join(choices)}; got {getattr(w, name)!r}")
    _validate_kind_fields(w)
    _validate_numbers(w)
    w.definition.check(w)
    _validate_time(w)
    _validate_lateness(w)
    _validate_output_names(w)


def _validate_kind_fields(w: Window) -> None:
    """A field only some kinds use, set to a non-default value on another
    kind, is refused: a silently ignored setting is a bug."""
    kind = w.definition
    for name in KIND_FIELDS:
        if name not in kind.fields and getattr(w, name) != _default(name):
            raise ConfigError(name, f"is not used by kind = '{w.kind}' (only by {', '.join(kinds_taking(name))})",
                              f"remove `{name}`")
    for name in kind.required:
        if getattr(w, name) is None:
            raise ConfigError(name, f"kind = '{w.kind}' requires `{name}`")


def _validate_numbers(w: Window) -> None:
    positive = ("duration_ms", "hop_ms", "gap_ms", "size_rows", "hop_rows", "every_rows",
                "max_duration_ms", "duration_months", "hop_months", "max_duration_months", "max_groups_per_window", "source_idleness_ms", "max_future_ms")
    whole = ("origin_ms", "landmark_ms", "lateness_ms", "allowed_lateness_ms")
    for name in positive + whole:
        value = getattr(w, name)
        if value is None or (name == "max_future_ms" and value == STREAMS_DEFAULT):
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            text = f'; give text as {name[:-3]}="{value}"' if isinstance(value, str) and name.endswith("_ms") else ""
            raise ConfigError(name, f"must be an integer, got {value!r}{text}")
        if name in positive and value <= 0:
            raise ConfigError(name, f"must be positive, got {value}")
        if name in ("lateness_ms", "allowed_lateness_ms") and value < 0:
            raise ConfigError(name, f"must not be negative, got {value}")


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
    for name in ("order_by", "tie_breaker"):
        if getattr(w, name) is not None:
            check_name(name, getattr(w, name))


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
            what = w.definition.closing_field
            raise ConfigError("punctuation.scope", f"column '{outside[0]}' is not in {what}"
                              f"{w.definition.closing_note}, so a keyed punctuation could not say which windows "
                              "it closes", f"use columns of {what}, or an empty scope")


def _validate_output_names(w: Window) -> None:
    if not w.aggregations:
        raise ConfigError("aggregations", "a window needs at least one aggregation",
                          'give aggregations=[Aggregation("count", as_="n")]',
                          "add [[transform.window.aggregations]] with agg and as")
    for name in ("window_start_column", "window_end_column", "window_id_column", "window_label_column"):
        if getattr(w, name) is not None:
            check_identifier(name, getattr(w, name))
    taken: dict[str, str] = {}
    for name in w.output_prefix:
        if name in taken:
            raise ConfigError("window_label_column" if name == w.window_label_column else "window_end_column",
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
