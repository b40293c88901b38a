"""`Shape`: a window kind's parameters, one frozen dataclass per kind (its
typed shape), and what generic code asks of a kind (docs/architecture.md#window-kinds).

A `wid.spec.window.Window` holds its kind's shape; TOML's ``kind`` is the
shape's tag (`Shape.kind`). The registry (`wid.spec.kinds.KINDS`) maps
each tag to its shape class, and every other layer's registry is keyed by
the shape class: the kind's geometry and oracle (`wid.semantics.kinds`),
its plans on the driver (`wid.spark.kinds`), which build its WID operator
engine's shape (`wid.kernels.operator.engines`).

A shape checks its own fields when it is made (`check`: durations, spans,
calendars) and, once in a Window, the rules that involve the Window's
other settings (`check_window`: late data, emit modes). It serialises to a
plain, stable table (`table`), its TOML form.
"""

from __future__ import annotations

import keyword
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, dataclass_transform

from wid.errors import ConfigError
from wid.spec.durations import as_ms, text_keys
from wid.spec.field_rules import RULE, check_fields, default_of, description

if TYPE_CHECKING:
    from wid.spec.window import Window

S = TypeVar("S", bound="Shape")
EMITS = ("on_close", "on_update")


@dataclass(frozen=True, kw_only=True, repr=False)
class Shape:
    """A window kind (the WID paper's window-semantics framework, Li et al.,
    SIGMOD 2005, section 3): its parameters as fields, its facts as class
    variables, and what generic code asks of it as methods. Subclasses are
    declared with `shape`."""

    kind: ClassVar[str]  # TOML's `kind`: the shape's tag
    fields: ClassVar[tuple[str, ...]] = ()  # its parameters, its own first (set by `shape`)
    descriptions: ClassVar[dict[str, str]] = {}  # what each parameter means (set by `shape`, from its declaration)
    constructor: ClassVar[str] = ""  # Window.<constructor>(...); the kind's name (with a `_` if a keyword)
    positional: ClassVar[tuple[str, ...]] = ()  # the parameters Window.<constructor>() also takes by position
    required: ClassVar[tuple[str, ...]] = ()
    #: one output row per input row (rolling): no window bounds, no group cap
    row_windows: ClassVar[bool] = False
    #: its windows are numbered in the output (`Window.window_id_column`: count windows)
    numbered: ClassVar[bool] = False
    #: a window may change its identity on a stream (sessions merge, or take an earlier start), so keyed
    #: sinks delete its old natural key
    retracts: ClassVar[bool] = False
    #: the field whose columns a closing point (watermark or keyed punctuation) applies per, and why
    closing_field: ClassVar[str] = "group_by"
    closing_note: ClassVar[str] = ""
    #: the output column naming a window in its natural key, as the name of a `Window` field
    key_column: ClassVar[str] = "window_start_column"
    #: the emit modes it has on a stream (a window that never closes has no final value to emit on close)
    stream_emits: ClassVar[tuple[str, ...]] = EMITS
    #: Spark's own window() computes it (tumbling, hopping): real-time mode can run it (`wid.spec.real_time`)
    in_spark_window: ClassVar[bool] = False

    text_forms: tuple[tuple[str, object], ...] = field(default=(), init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name.endswith("_ms"):
                object.__setattr__(self, f.name, as_ms(getattr(self, f.name), f.name))
        check_fields(self)
        for name in self.required:
            if getattr(self, name) is None:
                raise ConfigError(name, f"kind = '{self.kind}' requires `{name}`")
        self.check()

    # -- what the columns of a window mean, for generic code (a kind sets the ones it takes as fields) --
    @property
    def partition_by(self) -> tuple[str, ...]:
        """Columns ranks are counted per, before the group columns in keys and output (count windows)."""
        return ()

    @property
    def tie_breaker(self) -> str | None:
        """The column ordering rows tied on event time (ranks, `first`, `last`)."""
        return None

    @property
    def time_zone(self) -> str | None:
        """The zone of a calendar window (event times of `TIMESTAMP_NTZ` are its local times)."""
        return None

    @property
    def window_label_column(self) -> str | None:
        """The output column naming each window on its calendar."""
        return None

    # -- rules ---------------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise ConfigError, naming the field, for parameters this kind refuses."""

    def check_window(self, w: Window) -> None:
        """Raise ConfigError, naming the field, for a setting of `w` (late
        data, emit mode) this kind refuses, in batch and on a stream."""

    def stream_problem(self, w: Window) -> tuple[str, str] | None:
        """(field, why) when `w` has no streaming semantics though it has
        batch ones (`wid.semantics.trigger.stream_problems` adds the emit
        modes); None when it has."""
        return None

    def late_rows(self, w: Window) -> bool:
        """Can a row of `w`'s stream be late (behind what its window already emitted)?"""
        return True

    # -- what generic code asks ----------------------------------------------------------------------------
    def ranks_rows(self) -> bool:
        """Does the window rank rows (a count window, or every n-th row of a rolling one)?"""
        return False

    def earliest_ms(self) -> int | None:
        """The earliest event time it windows (epoch ms; an earlier row is bad
        input, "event time before landmark_ms"), or None."""
        return None

    def columns(self) -> list[tuple[str, str]]:
        """The input columns its parameters name, each with its field (a
        session's gap column, ranks' order), in field order."""
        out: list[tuple[str, str]] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.init and f.metadata.get(RULE) == "column" and value:
                out.append((f.name, value))
            elif f.init and f.metadata.get(RULE) == "columns":
                out += [(f.name, c) for c in value]
        return out

    def output_prefix(self, w: Window) -> tuple[str, ...]:
        """The window columns before the group columns in the output."""
        if self.row_windows:
            return ()
        label = (self.window_label_column,) if self.window_label_column is not None else ()
        return (w.window_start_column, w.window_end_column, *label, *((w.window_id_column,) if self.numbered else ()))

    def closing_columns(self, w: Window) -> tuple[str, ...]:
        """The columns a closing point applies per (`closing_field`'s)."""
        owner = self if self.closing_field in self.fields else w
        found: tuple[str, ...] = getattr(owner, self.closing_field)
        return found

    def natural_key(self, w: Window, output_columns: Sequence[str], values: Sequence[str]) -> list[str]:
        """The output columns identifying a row, for idempotent upserts: the
        window's `key_column` and the key columns; a row window's every
        output column but the aggregate `values`."""
        if self.row_windows:
            return [c for c in output_columns if c not in values]
        return [getattr(w, self.key_column), *w.key_columns]

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.table().items() if k != "kind"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    def table(self) -> dict[str, Any]:
        """The shape as a plain table, its TOML form: ``kind``, then every
        parameter not at its default, as written (text kept as text, lists
        for tuples). Stable: the same shape gives the same table."""
        out: dict[str, Any] = {"kind": self.kind}
        for name in self.fields:
            value = getattr(self, name)
            if value != field_default(type(self), name) and value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        for key, written in self.text_forms:  # as the TOML wrote it: duration = "1 hour"
            out.pop(f"{key}_ms", None)
            out.pop(f"{key}_months", None)
            out[key] = written
        return out


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def shape(cls: type[S]) -> type[S]:
    """Declare a kind's shape: `cls` as a frozen, keyword-only dataclass
    whose ``*_ms`` fields also take text under their names without ``_ms``
    (`wid.spec.durations.text_keys`), with its `fields` and `constructor`."""
    made = dataclass(frozen=True, kw_only=True, repr=False)(cls)
    made.__init__ = text_keys(made.__init__)  # type: ignore[method-assign]
    params = [f.name for f in fields(made) if f.init]
    own = [n for n in cls.__dict__.get("__annotations__", {}) if n in params]
    made.fields = tuple(dict.fromkeys([*own, *params]))  # its own parameters first, then its mixins'
    made.descriptions = {f.name: description(f) for f in fields(made) if f.init}
    if not made.constructor:
        made.constructor = made.kind + ("_" if keyword.iskeyword(made.kind) else "")
    return made


def shape_as(w: Window, cls: type[S]) -> S:
    """`w`'s shape as `cls`: a kind's code reading its own parameters. Raises
    TypeError for a window of another kind (a registry that sent it to the
    wrong kind's code)."""
    if not isinstance(w.shape, cls):
        raise TypeError(f"a {w.kind} window is not a {cls.__name__} one")
    return w.shape


def field_default(cls: type[Shape], name: str) -> Any:
    """The default of parameter `name` of shape `cls`."""
    return next(default_of(f) for f in fields(cls) if f.name == name)


def hop_within(s: Shape, hop: str, length: str) -> None:
    """A hop longer than the window leaves rows in no window (Bytewax's rule)."""
    h, d = getattr(s, hop), getattr(s, length)
    if h is not None and d is not None and h > d:
        raise ConfigError(hop, f"{hop} = {h} is longer than {length} = {d}; there would be gaps "
                          "between windows where rows belong to no window", f"make {hop} <= {length}")


def refuse_reopen_of_ranks(w: Window, rank_by: str, why: str) -> None:
    """Late rows cannot reopen what ranks decide: a late row would take a
    rank before rows already emitted and shift every later rank."""
    if w.late_data == "reopen":
        raise ConfigError("late_data", f"late_data = 'reopen' is not defined for {w.kind} windows ranked by "
                          f"{rank_by}: {why}", "use late_data = 'dlq' to keep late rows, or 'drop'")


SHIFTED_RANKS = ("a late row would take a rank before rows already emitted and shift every later rank, "
                 "so every window after it would change, not only the one it falls in")

__all__ = ["EMITS", "SHIFTED_RANKS", "Shape", "field_default", "hop_within", "refuse_reopen_of_ranks", "shape", "shape_as"]
