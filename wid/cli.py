"""The `wid` command line: run, validate and explain pipelines; check the
machine with `doctor`.

Errors a user can cause print one clear message and exit with status 2;
``--debug`` shows the stack trace instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from wid.errors import WidError
from wid.spark_output import SparkOutput
from wid.spec.pipeline import JoinPipelineSpec
from wid.spec.real_time import FORM as REAL_TIME_FORM
from wid.spec.toml_io import load_pipeline

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="wid: window aggregates for Apache Spark (tumbling, hopping, session, count, rolling, landmark).")
console = Console()
err_console = Console(stderr=True, soft_wrap=True)
T = TypeVar("T")

PipelineArg = Annotated[Path, typer.Argument(help="The pipeline TOML file.")]
MasterOpt = Annotated[str | None, typer.Option(
    help="Spark master, e.g. local[2] or spark://host:7077 (instead of the pipeline's [spark] master).")]
RemoteOpt = Annotated[str | None, typer.Option(
    help="A Spark Connect server, e.g. sc://host:15002 (instead of the pipeline's [spark] master).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show stack traces.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", help="Let Spark print its own log to the terminal.")]
SPARK_OUTPUT = SparkOutput(verbose=True)  # the command's; replaced by `_quiet_spark`


def _guard(debug: bool, action: Callable[[], T]) -> T:
    """Run `action`; an error becomes one to three lines (what, where, the
    fix) and exit status 2, or its stack trace with `debug`."""
    try:
        return action()
    except WidError as err:
        if debug:
            raise
        err_console.print(f"[bold red]error:[/] {escape(str(err))}")
        raise typer.Exit(2) from None
    except Exception as err:  # an error wid does not know: still one line, and where to look
        if debug:
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        err_console.print(f"[bold red]error:[/] {escape(type(err).__name__)}: {escape(first)}")
        log = f"; Spark's log: {SPARK_OUTPUT.path}" if SPARK_OUTPUT.path else ""
        err_console.print(escape(f"rerun with --debug for the stack trace{log}"))
        raise typer.Exit(2) from None


def _quiet_spark(verbose: bool) -> None:
    """Send Spark's own output to a log file for the rest of the command
    (unless `verbose`), and wid's log lines to the terminal, one line each."""
    global SPARK_OUTPUT
    SPARK_OUTPUT = SparkOutput(verbose).__enter__()
    log = logging.getLogger("wid")
    if not any(isinstance(h, _ConsoleLog) for h in log.handlers):
        log.addHandler(_ConsoleLog())
        log.setLevel(logging.INFO)


class _ConsoleLog(logging.Handler):
    """wid's warnings (a sink's retries, say) as one line on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print(f"[yellow]warning:[/] {escape(record.getMessage())}")


@app.command()
def validate(pipeline: PipelineArg, debug: DebugOpt = False) -> None:
    """Check a pipeline file without starting Spark."""
    spec = _guard(debug, lambda: load_pipeline(pipeline))
    if isinstance(spec, JoinPipelineSpec):
        j = spec.join.join
        console.print(f"[green]ok[/]: pipeline [bold]{spec.name}[/], window join {list(j.window)} ms, "
                      f"{len(j.metrics)} metric(s), left {spec.join.left}, right {spec.join.right}, "
                      f"target {spec.target.kind}")
        return
    w = spec.window
    console.print(f"[green]ok[/]: pipeline [bold]{spec.name}[/], {w.kind} window, "
                  f"{len(w.aggregations)} aggregation(s), "
                  f"source {', '.join(s.format for s in spec.sources)}{' (stream)' if spec.source.is_stream else ''}, "
                  f"target {spec.target.kind}")


@app.command()
def run(pipeline: PipelineArg, debug: DebugOpt = False, verbose: VerboseOpt = False,
        master: MasterOpt = None, remote: RemoteOpt = None,
        quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
        metrics_port: Annotated[int | None, typer.Option(
            "--metrics-port", help="Serve Prometheus metrics on this port (streaming pipelines).")] = None) -> None:
    """Run a pipeline: source -> [transform] sql -> window -> target (batch, or
    streaming when the source is a stream)."""
    from wid.pipelines.read import session_for
    from wid.pipelines.report import preview
    from wid.pipelines.run import run as run_pipeline
    from wid.progress import SparkProgress

    spec = _guard(debug, lambda: _where(load_pipeline(pipeline), master, remote))
    _quiet_spark(verbose)
    for note in _parquet_warnings(spec):
        err_console.print(f"[yellow]warning:[/] {escape(note)}")
    streaming = spec.source.is_stream

    def go() -> Any:
        with console.status("starting Spark", spinner="dots"):
            spark = session_for(spec)
        metrics = _metrics(spec, metrics_port) if streaming else None
        with SparkProgress(spark, console, enabled=not (quiet or streaming) and console.is_terminal) as progress:
            report = run_pipeline(spec, spark, step=progress.step, metrics=metrics,
                                  on_progress=_batch_line if not quiet else lambda _: None,
                                  on_notice=(lambda text: console.print(escape(text))) if not quiet else lambda _: None)
        return report, preview(spec)

    report, rows = _guard(debug, go)
    _print_report(report, rows)
    if not report.identity_holds:
        err_console.print("[bold red]accounting identity violated[/]")
        raise typer.Exit(1)
    if report.interrupted:
        last = report.batches[-1].batch_id if report.batches else None
        console.print(escape(f"stopped on an interrupt after micro-batch {last}: run again to resume from the "
                             "checkpoint"))
        raise typer.Exit(130)


def _where(spec: Any, master: str | None, remote: str | None) -> Any:
    """`spec` with ``--master`` or ``--remote`` in place of its ``[spark]``
    master or remote (checked as the TOML's are). A master or Spark Connect
    server chosen outside wid (spark-submit, ``SPARK_REMOTE``, a running
    session) still holds over both (`wid.spark.spark_session`)."""
    if master is None and remote is None:
        return spec
    from dataclasses import replace

    from wid.spec.pipeline import check_spark_table

    spark = {k: v for k, v in spec.spark.items() if k not in ("master", "remote")}
    spark.update({k: v for k, v in (("master", master), ("remote", remote)) if v is not None})
    check_spark_table(spark)
    return replace(spec, spark=spark)


def _metrics(spec: Any, port: int | None) -> Any:
    """Prometheus metrics for a stream, served on `port` (None: no metrics)."""
    if port is None:
        return None
    from wid.metrics import Metrics

    kind, late = (("window_join", spec.join.join.late_data) if isinstance(spec, JoinPipelineSpec)
                  else (spec.window.kind, spec.window.late_data))
    metrics = Metrics(spec.name, kind, late, tuple(s.name for s in spec.sources))
    metrics.serve(port)
    console.print(f"metrics: http://127.0.0.1:{port}/metrics")
    return metrics


def _batch_line(t: Any) -> None:
    """One line per micro-batch of a stream."""
    from datetime import UTC, datetime

    wm = datetime.fromtimestamp(t.watermark_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    rate = t.rows_in / (t.duration_ms / 1000) if t.duration_ms else 0.0
    console.print(f"batch {t.batch_id}: {t.rows_in:,} rows in ({rate:,.0f} rows/s, {t.duration_ms:,} ms), "
                  f"{t.rows_aggregated:,} aggregated, {t.rows_late_dropped:,} late dropped, "
                  f"{t.rows_late_dlq:,} late to the dead letter, {t.rows_rejected:,} rejected; watermark {wm}Z")


def _parquet_warnings(spec: Any) -> list[str]:
    return [f"{role} is Parquet in append mode: a rerun or restart writes its rows again"
            for role, sink in (("target", spec.target), ("dead_letter", spec.dead_letter))
            if sink.kind == "parquet" and sink.mode == "append"]


def _print_places(table: Table, report: Any) -> None:
    """Where a run's results, dead letters and checkpoint are, and how long it took; prints `table`."""
    table.add_row("results", escape(report.target))
    table.add_row("dead letters", escape(report.dead_letter))
    if report.checkpoint:
        table.add_row("checkpoint", escape(report.checkpoint))
    table.add_row("elapsed", f"{report.elapsed_s:.1f} s")
    console.print(table)


def _print_report(report: Any, rows: list[dict[str, Any]]) -> None:
    """The summary of a run (`wid.pipelines.report.Report`), batch or
    stream, and a few rows of the target."""
    title = f"pipeline {report.pipeline}" + (" (stream)" if report.streaming else f": {report.form}")
    table = Table(title=escape(title), show_header=False)
    if report.form == REAL_TIME_FORM:
        table.add_row("rows counted", "no: Spark's real-time mode keeps no per-row accounting (docs/semantics.md)")
        _print_places(table, report)
        return
    done = "joined (both sides)" if report.kind == "join" else "aggregated"
    table.add_row("rows in" + (" (both sides)" if report.kind == "join" else ""), f"{report.rows_in:,}")
    table.add_row(f"rows {done}", f"{report.rows_aggregated:,}")
    table.add_row("rows rejected (dead letter)", f"{report.rows_rejected:,}")
    for reason, n in sorted(report.rejected_by_reason.items()):
        table.add_row(f"  {escape(reason)}", f"{n:,}")
    table.add_row("rows late (dropped / dead letter)", f"{report.rows_late_dropped:,} / {report.rows_late_dlq:,}")
    ok = "[green]holds[/]" if report.identity_holds else "[red]VIOLATED[/]"
    where = " in every micro-batch" if report.streaming else ""
    table.add_row(f"rows in = rejected + late + {done.split()[0]}",
                  f"{report.rows_in:,} = {report.rows_rejected:,} + "
                  f"{report.rows_late_dropped + report.rows_late_dlq:,} + {report.rows_aggregated:,}  {ok}{where}")
    if report.punctuations:
        table.add_row("punctuations (not data, not aggregated)", f"{report.punctuations:,}")
    if report.streaming:
        table.add_row("micro-batches", f"{len(report.batches)}")
    table.add_row("rows written" if report.kind == "join" else "windows written",
                  f"{report.windows_emitted:,}" if report.windows_emitted is not None else "?")
    if report.rows_refused:
        table.add_row("rows the target could not hold (dead letter)", f"{report.rows_refused:,}")
    _print_places(table, report)
    if rows:
        preview = Table(title=escape(f"first rows of {report.target}"))
        for name in rows[0]:
            preview.add_column(escape(name))
        for r in rows:
            preview.add_row(*[f"{v:.3f}" if isinstance(v, float) else escape(str(v)) for v in r.values()])
        console.print(preview)


@app.command()
def explain(pipeline: PipelineArg, debug: DebugOpt = False, verbose: VerboseOpt = False,
            master: MasterOpt = None, remote: RemoteOpt = None,
            plan: Annotated[bool, typer.Option("--plan", help="Also print Spark's full physical plan.")] = False) -> None:
    """Say how each stage runs and why, its state bound, and how data may be lost."""
    from wid.pipelines.read import compile_pipeline, session_for
    from wid.spark.explain import explain as explain_stage

    spec = _guard(debug, lambda: _where(load_pipeline(pipeline), master, remote))
    _quiet_spark(verbose)

    def go() -> Any:
        from wid.spark.explain import explain_join

        with console.status("starting Spark and reading the source schema", spinner="dots"):
            spark = session_for(spec)
            if isinstance(spec, JoinPipelineSpec):
                return explain_join(compile_pipeline(spark, spec).result, spec)
            return explain_stage(compile_pipeline(spark, spec).result, spec.window, spec)

    ex = _guard(debug, go)
    console.print(f"[bold]pipeline {spec.name}[/]")
    if isinstance(spec, JoinPipelineSpec):
        console.print(f"  sources: left {spec.join.left}, right {spec.join.right} -> window join -> {spec.target.kind}")
    else:
        console.print(f"  source: {spec.source.format} -> "
                      f"{'[transform] sql -> ' if spec.transform_sql else ''}window -> {spec.target.kind}")
    console.print(f"  {'join' if isinstance(spec, JoinPipelineSpec) else 'window'} stage ({ex.kind}): [bold]{ex.form}[/]")
    console.print(f"    why: {ex.why}")
    for note in ex.notes:
        console.print(f"    note: {note}")
    console.print(f"    state: {ex.state}")
    ops = ", ".join(f"{n} {op}" for op, n in sorted(ex.operators.items()))
    console.print(f"    Spark operators: {ops} ({ex.operators.get('Exchange', 0)} shuffle(s))")
    console.print("  may lose or duplicate data:" if ex.warnings else "  may lose or duplicate data: no")
    for w in ex.warnings:
        console.print(f"    - {w}")
    if plan:
        console.print(ex.physical_plan)


@app.command()
def doctor(fetch_kafka: bool = typer.Option(False, "--fetch-kafka",
                                             help="first fetch Spark's Kafka connector into Ivy's cache")) -> None:
    """Check Java, Spark, PySpark, the optional packages and Spark's Kafka connector."""
    from wid.doctor import checks, fetch_kafka_connector

    if fetch_kafka:
        fetch_kafka_connector()

    table = Table(title="wid doctor")
    for col in ("check", "status", "found", "fix"):
        table.add_column(col)
    all_ok = True
    for c in checks():
        all_ok &= c.ok
        table.add_row(c.name, "[green]ok[/]" if c.ok else "[red]missing[/]", c.found, c.fix)
    console.print(table)
    if not all_ok:
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="wid")


if __name__ == "__main__":
    main()
