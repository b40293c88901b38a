"""`OperatorSpec`: what a shard of the WID operator needs to know about a
window, as plain values that ship to executors (no wid.spec import there;
`wid.spark.operator.query` builds it on the driver)."""

from __future__ import annotations

from dataclasses import dataclass

from wid.kernels.vector_aggregates import VectorAgg
from wid.semantics.calendar_windows import CalendarHopping, CalendarLandmark
from wid.semantics.windowing import Hopping, Landmark

US = 1000


@dataclass(frozen=True)
class Ranking:
    """How rows are ranked (count windows, `every_rows`): ``by`` is
    ``"order"`` (final once the closing point passes a row) or ``"arrival"``
    (earlier micro-batches first, final on arrival); `order` names the
    columns of the rank order within that, in SQL order (`TS` first for
    ``"order"``)."""

    by: str
    order: tuple[str, ...]


@dataclass(frozen=True)
class CountShape:
    """Count windows: `size` and `hop` rows, ranks per `partition_by`, the
    window id written to `id_column`."""

    size: int
    hop: int
    partition_by: tuple[str, ...]
    ranking: Ranking
    id_column: str = "window_id"


@dataclass(frozen=True)
class RollingShape:
    """Rolling windows over ``(ts - duration, ts]``; with `every_rows` n only
    every n-th row (by `ranking`) opens an extent; `columns` are the input
    columns every output row carries, in input order."""

    duration_us: int
    every_rows: int
    ranking: Ranking
    columns: tuple[str, ...]


@dataclass(frozen=True)
class LandmarkShape:
    """Landmark windows from `landmark_us` growing by `hop_us`, restarting
    every `max_duration_us` if set (Flink's CUMULATE); or on a `calendar`
    (`wid.semantics.calendar_windows.CalendarLandmark`, which then holds
    them all)."""

    landmark_us: int
    hop_us: int
    max_duration_us: int | None = None
    calendar: CalendarLandmark | None = None

    def geometry(self) -> Landmark | CalendarLandmark:
        """The windows' geometry."""
        return self.calendar or Landmark(self.hop_us, self.landmark_us, self.max_duration_us)


@dataclass(frozen=True)
class OperatorSpec:
    """A window, as the operator's shards see it. Times in microseconds,
    batch timestamps and idleness in milliseconds."""

    kind: str
    group_by: tuple[str, ...]
    aggs: tuple[VectorAgg, ...]
    aliases: tuple[str, ...]
    geometry: Hopping | CalendarHopping | None = None
    gap_us: int | None = None
    gap_column: str | None = None
    scope: tuple[str, ...] = ()
    lateness_us: int = 0
    allowed_us: int = 0
    late_mode: str = "generous"
    late_data: str = "drop"
    emit: str = "on_close"
    idleness_ms: int | None = None
    max_groups: int | None = None
    pipeline: str = "wid"
    shards: int = 1
    dead_letter_columns: tuple[str, ...] = ()
    count: CountShape | None = None
    rolling: RollingShape | None = None
    landmark: LandmarkShape | None = None

    @property
    def reopen(self) -> bool:
        return self.late_data == "reopen"

    @property
    def on_update(self) -> bool:
        return self.emit == "on_update"


__all__ = ["CountShape", "LandmarkShape", "OperatorSpec", "Ranking", "RollingShape"]
