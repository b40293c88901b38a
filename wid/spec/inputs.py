"""What a window or window join reads from its input, and checking a
pipeline's inputs without Spark (``wid validate``).

`window_columns` and `join_columns` list the input columns a stage names,
each with the field that names it; the Spark plans check them against a
DataFrame's columns (`wid.spark.prepare`, `wid.spark.join`), and
`check_inputs` against a pipeline's declared schemas, before Spark starts:

- a batch source of local files (``csv``, ``json``, ``parquet``; no URI)
  must exist (a streaming source's landing directory is made when the
  stream starts);
- a column the stage names must be in the source's declared `schema`
  (Spark DDL, read with sqlglot's Spark dialect), plus the columns the
  reader adds (Kafka's message columns; the rate source's). A source whose
  columns are not known without Spark (no schema, a Python object, a
  schema sqlglot cannot read), or a stage behind a SQL pre-stage, is left
  to Spark, which checks the same when the stage is compiled.
"""

from __future__ import annotations

from pathlib import Path

from wid.errors import ConfigError
from wid.spec.join import ColumnMetric, Metric, WindowJoin
from wid.spec.pipeline import (
    KAFKA_EVENT_TIME,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    KAFKA_VALUE,
    JoinPipelineSpec,
    PipelineSpec,
    SourceSpec,
    is_uri,
)
from wid.spec.window import Window

Wanted = list[tuple[str, str]]  # (field, column)
# The columns a reader adds: Kafka's message columns (wid.io.kafka), the rate source's
_ADDED = {"kafka": (KAFKA_EVENT_TIME, KAFKA_TOPIC, KAFKA_PARTITION, "_offset", "_key", KAFKA_VALUE),
          "rate": ("timestamp", "value"), "rate-micro-batch": ("timestamp", "value")}
FILE_FORMATS = ("csv", "json", "parquet")


def window_columns(window: Window) -> Wanted:
    """The input columns `window` reads, each with its field: the event
    time, the columns its kind's parameters name (a session's gap, ranks'
    order, `partition_by`), `group_by`, then each aggregation's columns, in
    that order."""
    wanted = [("event_time_column", window.event_time_column)] if window.event_time_column else []
    wanted += window.shape.columns() + [("group_by", c) for c in window.group_by]
    for i, agg in enumerate(window.aggregations):
        wanted += [(f"aggregations[{i}].column", c) for c in agg.columns]
    return wanted


def metric_columns(metric: Metric) -> tuple[str, ...]:
    """The right-side columns a window join's metric reads."""
    return (metric.column,) if isinstance(metric, ColumnMetric) else metric.columns


def join_columns(join: WindowJoin, side: str) -> Wanted:
    """The columns a window join reads from its `side` (``left`` or
    ``right``): the matching and time columns; on the right, the metrics'."""
    j = 0 if side == "left" else 1
    wanted = [(f"matching_column[{j}]", k) for k in join.matching_column[j]]
    if join.time_column is not None:
        wanted.append((f"time_column[{j}]", join.time_column[j]))
    if side == "right":
        wanted += [(f"metrics[{i}].column", c) for i, m in enumerate(join.metrics) for c in metric_columns(m)]
    return wanted


def declared_columns(source: SourceSpec) -> tuple[str, ...] | None:
    """The columns `source` gives, from its declared schema and its
    reader; None when they are not known without Spark."""
    added = _ADDED.get(source.format, ())
    if source.format in ("rate", "rate-micro-batch"):
        return added
    if source.format == "python" or source.schema is None:
        return None
    import sqlglot
    from sqlglot import exp

    try:
        table = sqlglot.parse_one(f"CREATE TABLE t ({source.schema})", read="spark")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(table.this, exp.Schema):
        return None
    return tuple(c.name for c in table.this.expressions if isinstance(c, exp.ColumnDef)) + added


def check_paths(spec: PipelineSpec | JoinPipelineSpec) -> None:
    """Raise ConfigError naming ``source.path`` for a batch source of local
    files that does not exist (relative paths read against the pipeline
    file's directory)."""
    for i, s in enumerate(spec.sources):
        if s.is_stream or s.format not in FILE_FORMATS or not s.path or is_uri(s.path):
            continue
        path = Path(s.path).expanduser()
        path = path if path.is_absolute() else Path(spec.base_dir) / path
        if not path.exists():
            field = f"source[{i}].path" if spec.more_sources else "source.path"
            raise ConfigError(field, f"no such file or directory: {path.resolve()}", "check the path")


def _check(wanted: Wanted, have: tuple[str, ...] | None, where: str, fix: str) -> None:
    if have is None:
        return
    for field, col in wanted:
        if col not in have:
            raise ConfigError(field, f"column '{col}' is not in {where} (its columns: {', '.join(have)})", fix)


def check_inputs(spec: PipelineSpec | JoinPipelineSpec) -> None:
    """Check `spec`'s inputs without Spark (see the module docstring).
    Raises ConfigError naming the field: ``source.path``, or the stage's
    field that names a column the declared schema lacks."""
    check_paths(spec)
    fix = "fix the name, or derive the column in a [transform] sql pre-stage"
    if isinstance(spec, JoinPipelineSpec):
        stage = spec.join
        by_name = {s.name: s for s in spec.sources}
        for side in ("left", "right"):
            source = by_name.get(getattr(stage, side))
            if source is not None and getattr(stage, f"{side}_sql") is None:
                _check([(f"join.{f}", c) for f, c in join_columns(stage.join, side)], declared_columns(source),
                       f"the {side} source's schema", f"fix the name, or derive the column in join.{side}_sql")
        return
    if spec.transform_sql is not None:
        return
    found = [declared_columns(s) for s in spec.sources]
    if any(cols is None for cols in found):
        return
    have = tuple(dict.fromkeys(c for cols in found for c in cols or ()))
    _check([(f"transform.window.{f}", c) for f, c in window_columns(spec.window)], have,
           "the source's schema" if len(found) == 1 else "the sources' schemas", fix)


__all__ = ["FILE_FORMATS", "check_inputs", "check_paths", "declared_columns", "join_columns", "metric_columns",
           "window_columns"]
