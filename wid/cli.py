"""The `wid` command line: run, validate and explain pipelines; check the
machine with `doctor`.

Errors a user can cause print one clear message and exit with status 2;
``--debug`` shows the stack trace instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from wid import __version__
from wid.cli_report import err_console, say
from wid.errors import ConfigError, WidError
from wid.pipelines.rejections import DEFAULT_SHARE, STRICT_EXIT
from wid.spark_output import SparkOutput
from wid.spec.kinds import KINDS
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec
from wid.spec.real_time import FORM as REAL_TIME_FORM
from wid.spec.toml_io import load_pipeline
from wid.versions import check_install

# Help texts are printed as written: Rich markup would eat their square brackets ([spark], local[2]).
HELP = f"wid: window aggregates for Apache Spark ({', '.join(KINDS)})."  # the kinds: wid.spec.kinds' registry
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None, help=HELP)
T = TypeVar("T")

PipelineArg = Annotated[Path, typer.Argument(help="The pipeline TOML file.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show stack traces.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", help="Let Spark print its own log and warnings to the terminal.")]
MasterOpt = Annotated[str | None, typer.Option(
    help="Spark master, e.g. local[2] or spark://host:7077 (instead of the pipeline's [spark] master).")]
RemoteOpt = Annotated[str | None, typer.Option(
    help="A Spark Connect server, e.g. sc://host:15002 (instead of the pipeline's [spark] master).")]
SPARK_OUTPUT = SparkOutput(verbose=True)  # the command's; replaced by `_quiet_spark`


def _version(value: bool) -> None:
    if value:
        say(f"wid {__version__}")
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                   help="Print wid's version and exit.")] = False) -> None:
    """wid: window aggregates for Apache Spark (the window kinds of `wid.spec.kinds`)."""


def _guard(debug: bool, action: Callable[[], T]) -> T:
    """Run `action`; an error becomes one to three lines (what, where, the
    fix) and exit status 2, or its stack trace with `debug`. An error wid
    does not know is its root cause in one line (`wid.spark.errors.root_cause`:
    the innermost cause Spark's message holds; when that says only that
    Spark did not start, the cause in Spark's log, `cause_in_log`), then
    where Spark's log is."""
    try:
        return action()
    except WidError as err:
        if debug:
            raise
        shown = err.in_toml() if isinstance(err, ConfigError) else err  # a command runs pipeline files
        err_console.print("error: " + str(shown), style="bold red")
        raise typer.Exit(getattr(err, "exit_code", 2)) from None
    except Exception as err:  # an error wid does not know: still one line, and where to look
        if debug:
            raise
        from wid.spark.errors import cause_in_log, root_cause, says_nothing, with_fix

        text = str(err).strip()
        cause = root_cause(text)
        if says_nothing(cause) and SPARK_OUTPUT.path:  # Spark did not start: why is in its log
            cause = cause_in_log(Path(SPARK_OUTPUT.path).read_text(encoding="utf-8", errors="replace")) or cause
        cause = with_fix(cause) if cause else f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"
        err_console.print(f"error: {cause}", style="bold red")
        log = f"; Spark's log: {SPARK_OUTPUT.path}" if SPARK_OUTPUT.path else ""
        say(f"rerun with --debug for the stack trace{log}", err=True)
        raise typer.Exit(2) from None


def _quiet_spark(verbose: bool) -> None:
    """Send Spark's own output, and Python's warnings (PySpark's), to a log
    file for the rest of the command (unless `verbose`), and wid's log lines
    to the terminal, one line each."""
    global SPARK_OUTPUT
    SPARK_OUTPUT = SparkOutput(verbose).__enter__()
    if SPARK_OUTPUT.path:
        logging.captureWarnings(True)
        logging.getLogger("py.warnings").addHandler(logging.FileHandler(SPARK_OUTPUT.path))
        logging.getLogger("py.warnings").propagate = False
    log = logging.getLogger("wid")
    if not any(isinstance(h, _ConsoleLog) for h in log.handlers):
        log.addHandler(_ConsoleLog())
        log.setLevel(logging.INFO)


class _ConsoleLog(logging.Handler):
    """wid's warnings (a sink's retries, say) as one line on stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        err_console.print("warning: " + record.getMessage(), style="yellow")


@app.command()
def validate(pipeline: PipelineArg, debug: DebugOpt = False,
             offline: Annotated[bool, typer.Option(
                 "--offline", help="Skip the checks that need the network: Kafka brokers and topics, PostgreSQL "
                                   "servers and tables.")] = False) -> None:
    """Check a pipeline file without starting Spark: its keys and values, its local input files, the columns
    it names against the sources' declared schemas, for a stream what its window's trigger policy refuses on a
    stream, and what `wid run` checks before Spark starts (Kafka brokers and topics; PostgreSQL's driver, URL
    variables, server and table), each in one bounded wait."""
    from wid.pipelines.read import check_before_spark
    from wid.semantics.trigger import check_stream
    from wid.spec.inputs import check_inputs

    spec = _guard(debug, lambda: load_pipeline(pipeline))
    _guard(debug, lambda: check_inputs(spec))
    if isinstance(spec, PipelineSpec) and spec.source.is_stream:
        _guard(debug, lambda: _in_window(lambda: check_stream(spec.window)))
    _guard(debug, lambda: check_before_spark(spec, network=not offline))
    if isinstance(spec, JoinPipelineSpec):
        j = spec.join.join
        say(f"ok: pipeline {spec.name}, window join {list(j.window)} ms, {len(j.metrics)} metric(s), "
            f"left {spec.join.left}, right {spec.join.right}, target {spec.target.kind}")
        return
    w = spec.window
    stream = " (stream)" if spec.source.is_stream else ""
    say(f"ok: pipeline {spec.name}, {w.kind} window, {len(w.aggregations)} aggregation(s), "
        f"source {', '.join(s.format for s in spec.sources)}{stream}, target {spec.target.kind}")


def _in_window(check: Callable[[], None]) -> None:
    """`check()`, its ConfigError naming the field under ``transform.window``."""
    try:
        check()
    except ConfigError as err:
        raise err.at("transform.window") from None


@app.command()
def run(pipeline: PipelineArg, debug: DebugOpt = False, verbose: VerboseOpt = False,
        master: MasterOpt = None, remote: RemoteOpt = None,
        quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
        metrics_port: Annotated[int | None, typer.Option(
            "--metrics-port", help="Serve Prometheus metrics on this port (streaming pipelines).")] = None,
        metrics_linger: Annotated[float, typer.Option(
            "--metrics-linger", help="Seconds the metrics stay up after the summary, for a last scrape.")] = 15.0,
        rejected_above: Annotated[float, typer.Option(
            "--rejected-above", min=0, max=100,
            help="Warn when a batch (or a micro-batch) rejects more than this percentage of its rows as bad input, "
                 "with its first rejected value and a fix.")] = 100 * DEFAULT_SHARE,
        strict: Annotated[bool, typer.Option(
            "--strict", help=f"Fail with status {STRICT_EXIT}, writing nothing of it, when a batch (or a micro-batch) "
                             "rejects more than --rejected-above.")] = False,
        ) -> None:
    """Run a pipeline: source -> [transform] sql -> window -> target (batch, or
    streaming when the source is a stream)."""
    _guard(debug, check_install)  # before pyspark is imported: a broken one may not import
    from wid.cli_report import batch_line, rejections_warnings, summary
    from wid.pipelines.read import session_for
    from wid.pipelines.report import preview
    from wid.pipelines.run import run as run_pipeline
    from wid.progress import SparkProgress
    from wid.spec.inputs import check_inputs

    spec = _guard(debug, lambda: _where(load_pipeline(pipeline), master, remote))
    _guard(debug, lambda: check_inputs(spec))  # before Spark starts
    streaming = spec.source.is_stream
    # Served before Spark starts: a bad or busy port fails at once, in one line.
    metrics = _guard(debug, lambda: _metrics(spec, metrics_port)) if streaming else None
    _quiet_spark(verbose)
    for note in _parquet_warnings(spec):
        err_console.print("warning: " + note, style="yellow")

    def go() -> Any:
        with err_console.status("starting Spark", spinner="dots"):
            spark = session_for(spec)
        enabled = not (quiet or streaming) and err_console.is_terminal
        with SparkProgress(spark, err_console, enabled=enabled) as progress:
            report = run_pipeline(spec, spark, step=progress.step, metrics=metrics,
                                  on_progress=batch_line if not quiet else lambda _: None,
                                  on_notice=say if not quiet else lambda _: None, rejected_share=share,
                                  strict=strict)
        return report, preview(spec)

    share = rejected_above / 100
    report, rows = _guard(debug, go)
    summary(report, _what(spec), rows, real_time=report.form == REAL_TIME_FORM)
    rejections_warnings(report, share, None if isinstance(spec, JoinPipelineSpec) else spec.window)
    if metrics is not None:
        _linger(metrics.port, metrics_linger)
    if not report.identity_holds:
        say("accounting identity violated", style="bold red", err=True)
        raise typer.Exit(1)
    if report.interrupted:
        when = f"after micro-batch {report.batches[-1].batch_id}" if report.batches else "before a micro-batch ended"
        say(f"stopped on an interrupt {when}: run again to resume from the checkpoint")
        raise typer.Exit(130)


def _what(spec: Any) -> str:
    """What a pipeline computes, in users' words."""
    return "a window join" if isinstance(spec, JoinPipelineSpec) else f"{spec.window.kind} windows"


def _where(spec: Any, master: str | None, remote: str | None) -> Any:
    """`spec` with ``--master`` or ``--remote`` in place of its ``[spark]``
    master or remote (checked as the TOML's are). A master or Spark Connect
    server chosen outside wid (spark-submit, ``SPARK_REMOTE``, a running
    session) still holds over both (`wid.spark.spark_session`)."""
    if master is None and remote is None:
        return spec
    from dataclasses import replace

    from wid.spec.spark_table import check_spark_table

    spark = {k: v for k, v in spec.spark.items() if k not in ("master", "remote")}
    spark.update({k: v for k, v in (("master", master), ("remote", remote)) if v is not None})
    check_spark_table(spark, lambda key: f"--{key}" if key in ("master", "remote") else f"spark.{key}")
    return replace(spec, spark=spark)


def _metrics(spec: Any, port: int | None) -> Any:
    """Prometheus metrics for a stream, served on `port` (None: no metrics;
    0: a free port), and the line that says where. Raises ConfigError naming
    ``--metrics-port`` for a port out of range or one that cannot be served
    (in use)."""
    if port is None:
        return None
    from wid.pipelines.metrics import Metrics

    fix = "give a free port from 0 to 65535 (0: any free port)"
    kind, late = (("window_join", spec.join.join.late_data) if isinstance(spec, JoinPipelineSpec)
                  else (spec.window.kind, spec.window.late_data))
    metrics = Metrics(spec.name, kind, late, tuple(s.name for s in spec.sources), spec.stream.interval_s)
    try:
        metrics.serve(port)
    except ValueError:
        raise ConfigError("--metrics-port", f"port {port} is not in 0..65535", fix) from None
    except OSError as err:
        raise ConfigError("--metrics-port", f"port {port} cannot be served on 127.0.0.1: {err.strerror or err}",
                          fix) from None
    say(f"metrics: http://127.0.0.1:{metrics.port}/metrics")
    return metrics


def _linger(port: int, seconds: float) -> None:
    """Keep the metrics endpoint up `seconds` after the summary, so that a
    scraper reads the run's last values; Ctrl-C ends the wait."""
    import contextlib
    import time

    if seconds <= 0:
        return
    # The notice is inside the guard: a scraper that reads it and at once
    # sends Ctrl-C may do so before a later guard would be entered.
    with contextlib.suppress(KeyboardInterrupt):
        say(f"metrics stay up at http://127.0.0.1:{port}/metrics for {seconds:g} s for a last scrape "
            "(Ctrl-C ends it)")
        time.sleep(seconds)


def _parquet_warnings(spec: Any) -> list[str]:
    return [f"{role} is Parquet in append mode: a rerun or restart writes its rows again"
            for role, sink in (("target", spec.target), ("dead_letter", spec.dead_letter))
            if sink.kind == "parquet" and sink.mode == "append"]


@app.command()
def explain(pipeline: PipelineArg, debug: DebugOpt = False, verbose: VerboseOpt = False,
            master: MasterOpt = None, remote: RemoteOpt = None,
            plan: Annotated[bool, typer.Option(
                "--plan", help="Start Spark, compile the stage over the sources' schemas (running no Spark job over "
                               "the rows), and print its form, its Spark operators and Spark's physical plan.")] = False,
            ) -> None:
    """Say how each stage runs and why, its state bound, and how data may be lost (from the file alone, without
    Spark; --plan compiles it on Spark)."""
    from wid.cli_report import explanation
    from wid.spark.explain import outline

    spec = _guard(debug, lambda: _where(load_pipeline(pipeline), master, remote))
    if not plan:
        explanation(spec, _guard(debug, lambda: outline(spec)), isinstance(spec, JoinPipelineSpec), plan)
        say("  (from the file alone; --plan compiles it on Spark for the exact plan)")
        return
    _guard(debug, check_install)
    _quiet_spark(verbose)

    def go() -> Any:
        from wid.pipelines.plan import explain_plan
        from wid.pipelines.read import session_for

        with err_console.status("starting Spark and reading the source schema", spinner="dots"):
            return explain_plan(session_for(spec), spec)

    explanation(spec, _guard(debug, go), isinstance(spec, JoinPipelineSpec), plan)


@app.command()
def status(path: Annotated[Path, typer.Argument(help="A pipeline file, or a stream's checkpoint directory.")],
           debug: DebugOpt = False, verbose: VerboseOpt = False, master: MasterOpt = None, remote: RemoteOpt = None,
           as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
           plot: Annotated[Path | None, typer.Option(
               "--plot", help="Draw the stream's history to this PNG file.")] = None) -> None:
    """Say what a stream's checkpoint holds, without running the stream (read only, also while it runs): its
    micro-batches, each source's and Kafka partition's watermark and which holds the global one back, the
    windows its state holds, the state per shard, and its history."""
    from wid.pipelines.history_plot import plot as draw
    from wid.pipelines.status import status_of

    spec = _guard(debug, lambda: _where(load_pipeline(path), master, remote)) if path.is_file() else None
    _guard(debug, check_install)
    _quiet_spark(verbose)

    def go() -> Any:
        from wid.pipelines.read import checkpoint_of, session_for
        from wid.spark.spark_session import spark_session

        session = session_for(spec, checks=False) if spec else spark_session(master=master, remote=remote)
        return status_of(session, checkpoint_of(spec) if spec else str(path), spec)
    found = _guard(debug, go)
    if plot is not None:
        _guard(debug, lambda: draw(found.history, plot, f"stream {spec.name if spec else found.checkpoint}"))
    if as_json:
        print(json.dumps(found.to_json(), default=str))
        return
    from wid.cli_status import show

    show(found)


@app.command()
def doctor(fetch_kafka: Annotated[bool, typer.Option(
        "--fetch-kafka", help="First fetch Spark's Kafka connector into Ivy's cache.")] = False,
        debug: DebugOpt = False, verbose: VerboseOpt = False) -> None:
    """Check Java, Spark, PySpark, the optional packages and Spark's Kafka connector."""
    from wid.cli_report import doctor_lines
    from wid.doctor import checks, fetch_kafka_connector

    if fetch_kafka:
        _quiet_spark(verbose)
        with err_console.status("fetching Spark's Kafka connector", spinner="dots"):
            _guard(debug, fetch_kafka_connector)
    found = checks()
    doctor_lines(found)
    if any(c.status == "missing" for c in found):
        raise typer.Exit(1)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="wid")


if __name__ == "__main__":
    main()
