"""The planning context every batch plan of a window kind reads (`PlanContext`):
the window, its good rows, the pipeline's name for error messages, and the
Spark forms of its aggregations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from wid.aggregates.spark import Inputs, SparkAgg, spark_agg
from wid.spark.columns import TS, wall_clock
from wid.spark.output import where_label
from wid.spec.aggregation import Aggregation
from wid.spec.window import Window


def holistic(window: Window) -> list[str]:
    """Aliases of `window`'s aggregations with no constant-size merge."""
    return [a.as_ for a in window.aggregations if a.holistic]


@dataclass
class PlanContext:
    """Planning context: the window, the good rows (with `TS`), the pipeline
    name used in error messages."""

    window: Window
    rows: DataFrame
    pipeline: str = "wid"

    def aggs(self, where: Callable[[], Column] | None = None, extra: tuple[Aggregation, ...] = ()) -> list[SparkAgg]:
        """The Spark forms of the window's aggregations, then `extra` hidden
        ones; `where` makes the window's label for cap errors (`Inputs`)."""
        types = {f.name: f.dataType for f in self.rows.schema.fields}
        tie_breaker = self.window.shape.tie_breaker
        tb = F.col(tie_breaker) if tie_breaker else None
        inputs = Inputs(types=types, ts_us=F.col(TS), tie_breaker=tb, where=where)
        return [spark_agg(a, inputs) for a in (*self.window.aggregations, *extra)]

    def aggs_within(self, start_us: Column, end_us: Column, extra: tuple[Aggregation, ...] = ()) -> list[SparkAgg]:
        """`aggs`, whose cap errors name the window ``[start_us, end_us)``
        (epoch microseconds): as UTC instants, or as wall-clock times when
        the event time is a ``TIMESTAMP_NTZ`` read without a zone."""
        wall = self.window.shape.time_zone is None and wall_clock(self.rows, self.window)
        return self.aggs(lambda: where_label(start_us, end_us, self.pipeline, wall=wall), extra)

    @property
    def holistic(self) -> list[str]:
        """Aliases of aggregations with no constant-size merge."""
        return holistic(self.window)


__all__ = ["PlanContext", "holistic"]
