"""Running a pipeline: source -> optional SQL pre-stage -> window -> target,
with rejected rows to the dead-letter sink (DESIGN.md section 7)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from wid.errors import WidError
from wid.io import dead_letter, sinks
from wid.io.sources import read_source, resolve
from wid.io.sql_sinks import Refused
from wid.semantics.sink_state import natural_key
from wid.spark.columns import REASON
from wid.spark.compile import WindowResult, window_result
from wid.spark.errors import translate
from wid.spark.session import spark_session
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec


@dataclass(frozen=True)
class RunReport:
    """What a run did. The accounting identity of DESIGN.md section 5:
    ``rows_in == rows_rejected + rows_late_dropped + rows_late_dlq + rows_aggregated``
    (nothing is late in batch)."""

    pipeline: str
    rows_in: int
    rows_rejected: int
    rows_aggregated: int
    rejected_by_reason: dict[str, int]
    windows_emitted: int | None
    target: str
    dead_letter: str
    form: str
    elapsed_s: float
    rows_late_dropped: int = 0
    rows_late_dlq: int = 0
    punctuations: int = 0
    notes: tuple[str, ...] = field(default=())
    kind: str = "window"  # or "join": rows_aggregated then counts the rows of both sides that joined
    rows_refused: int = 0  # output rows the target database could not hold (in the dead letter, source "target")

    @property
    def identity_holds(self) -> bool:
        return self.rows_in == (self.rows_rejected + self.rows_late_dropped + self.rows_late_dlq
                                + self.rows_aggregated)


def session_for(spec: PipelineSpec | JoinPipelineSpec) -> SparkSession:
    """A Spark session with the pipeline's `[spark]` settings (``master``
    defaults to ``local[*]``; ``conf`` holds Spark configuration keys)."""
    conf = dict(spec.spark.get("conf", {}))
    conf.setdefault("spark.sql.execution.arrow.pyspark.enabled", "true")
    session: SparkSession = spark_session(master=spec.spark.get("master"), app_name=f"wid-{spec.name}", conf=conf)
    return session


def compile_pipeline(spark: SparkSession, spec: PipelineSpec) -> WindowResult:
    """Read the sources, apply the SQL pre-stage and compile the window.
    Raises ConfigError for a bad source path, bad SQL or missing columns."""
    frames = {s.name: read_source(spark, s, spec.base_dir) for s in spec.sources}
    if not spec.transform_sql:
        return window_result(frames, spec.window, pipeline=spec.name)
    for name, df in frames.items():
        df.createOrReplaceTempView(name)
    try:
        df = spark.sql(spec.transform_sql)
    except Exception as err:
        raise (translate(err, "transform.sql") or err) from None
    return window_result(df, spec.window, pipeline=spec.name, source=spec.source.name)


def reason_counts(prepared: DataFrame) -> dict[str | None, int]:
    """Rows per reject reason (None: the rows that were not rejected)."""
    return {r[0]: r[1] for r in prepared.groupBy(REASON).count().collect()}


def write_outputs(spec: PipelineSpec | JoinPipelineSpec, output: DataFrame, dead: DataFrame, key: list[str],
                  step: Callable[[str], Any]) -> tuple[int | None, int]:
    """Write `output` to the target (upserting on `key`) and the dead
    letters to the dead-letter sink, with the rows the target database
    could not hold; returns (rows written, rows the target refused)."""
    step(f"writing results to {sinks.describe(spec.target, spec.base_dir)}")
    refused: Refused = []
    written = sinks.write(output, spec.target, spec.base_dir, key, title=spec.name, refused=refused)
    if written is None or spec.target.kind == "console":
        written = output.count()
    step("writing dead letters")
    if refused:
        dead = dead.unionByName(dead_letter.refused_rows(output.sparkSession, refused))
    grouped = dead_letter.grouped(dead, spec.name)
    sinks.write(grouped, spec.dead_letter, spec.base_dir, list(dead_letter.KEY), title="dead letters")
    return written, len(refused)


def run_pipeline(spec: PipelineSpec, spark: SparkSession | None = None,
                 step: Callable[[str], Any] = lambda _: None) -> RunReport:
    """Run a batch pipeline end to end and return its report.

    `step(label)` is called as each step starts (for progress displays).
    Raises ConfigError, MissingDependencyError or StateCapError on errors a
    user can fix; other Spark failures propagate unchanged.
    """
    started = time.monotonic()
    spark = spark or session_for(spec)
    step("compiling")
    result = compile_pipeline(spark, spec)
    key = natural_key(spec.window, result.output.columns)
    punctuations = result.punctuations
    return run_stage(spec, started, result.prepared, step,
                     lambda: write_outputs(spec, result.output, result.dead_letter, key, step),
                     form=result.planned.form, notes=result.planned.notes,
                     punctuations=lambda: punctuations.count() if punctuations is not None else 0)


def run_stage(spec: PipelineSpec | JoinPipelineSpec, started: float, prepared: DataFrame, step: Callable[[str], Any],
              write: Callable[[], tuple[int | None, int]], *, form: str, notes: tuple[str, ...], kind: str = "window",
              punctuations: Callable[[], int] = lambda: 0) -> RunReport:
    """Count the `prepared` rows by reject reason, run `write` (which
    returns the rows written and those the target refused) and report; user
    errors from Spark are translated (`wid.spark.errors.translate`)."""
    prepared = prepared.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        step("reading and checking rows")
        counts = reason_counts(prepared)
        n_punctuations = punctuations()
        written, refused = write()
    except WidError:
        raise
    except Exception as err:
        raise (translate(err) or err) from None
    finally:
        prepared.unpersist()
    rejected = {k: v for k, v in counts.items() if k is not None}
    return RunReport(
        pipeline=spec.name, rows_in=sum(counts.values()), rows_rejected=sum(rejected.values()),
        rows_aggregated=counts.get(None, 0), rejected_by_reason=rejected, windows_emitted=written,
        target=sinks.describe(spec.target, spec.base_dir), dead_letter=sinks.describe(spec.dead_letter, spec.base_dir),
        form=form, elapsed_s=time.monotonic() - started, punctuations=n_punctuations, notes=notes, kind=kind,
        rows_refused=refused)


def preview(spec: PipelineSpec | JoinPipelineSpec, spark: SparkSession, rows: int = 8) -> list[dict[str, Any]]:
    """A few result rows read back from the target (SQLite) for the summary."""
    if spec.target.kind != "sqlite":
        return []
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(resolve(spec.target.path or "", spec.base_dir))) as con:
        con.row_factory = sqlite3.Row
        window = spec.window if isinstance(spec, PipelineSpec) else None
        order = window.window_start_column if window is not None and window.kind != "rolling" else "rowid"
        cur = con.execute(f'SELECT * FROM "{spec.target.table}" ORDER BY "{order}" LIMIT ?', (rows,))
        return [dict(r) for r in cur.fetchall()]


__all__ = ["RunReport", "compile_pipeline", "preview", "reason_counts", "run_pipeline", "run_stage", "session_for",
           "write_outputs"]
