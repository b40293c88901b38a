"""What ``wid`` prints: a run's summary, a stream's line per micro-batch,
the first rows of the target, and ``wid explain``'s explanation.

Everything goes through `wid.terminal.Terminal` consoles, which read no
markup and no emoji codes and print the characters a terminal acts on as
escapes: pipeline names, paths, SQL and messages hold square brackets
(``[transform] sql``, ``local[2]``, ``.[dev]``), which Rich's markup would
eat, and values from the data may hold anything. Table cells that hold
data or paths go through `wid.terminal.shown`, so that one row stays one
row. Styles are given as styles, never as markup in the text.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from wid.terminal import Terminal, shown

console = Terminal()
err_console = Terminal(stderr=True)
_ISO = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?Z$")


def say(text: str, style: str | None = None, err: bool = False) -> None:
    """Print `text` as text (no markup, no emoji codes, the characters a
    terminal acts on as escapes; newlines kept), in `style`."""
    (err_console if err else console).print(text, style=style)


def when(value: Any) -> str:
    """A window bound or timestamp as a reader wants it: ``2013-01-01
    05:00:00Z`` (fractions kept only when they are not zero)."""
    match = _ISO.match(value) if isinstance(value, str) else None
    if match is None:
        return str(value)
    fraction = (match.group(3) or "").rstrip("0").rstrip(".")
    return f"{match.group(1)} {match.group(2)}{fraction}Z"


def batch_line(t: Any) -> None:
    """One line per micro-batch of a stream."""
    wm = datetime.fromtimestamp(t.watermark_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    rate = t.rows_in / (t.duration_ms / 1000) if t.duration_ms else 0.0
    say(f"batch {t.batch_id}: {t.rows_in:,} rows in ({rate:,.0f} rows/s, {t.duration_ms:,} ms), "
        f"{t.rows_aggregated:,} aggregated, {t.rows_late_dropped:,} late dropped, "
        f"{t.rows_late_dlq:,} late to the dead letter, {t.rows_rejected:,} rejected; watermark {wm}Z")


def title(report: Any, what: str) -> str:
    """A summary's title in users' words: the pipeline, what it computed
    (`what`: "tumbling windows", "a window join") and how it ran."""
    how = "a stream" if report.streaming else "a batch"
    return f"pipeline {report.pipeline}: {what}, {how}"


def summary(report: Any, what: str, rows: list[dict[str, Any]], real_time: bool = False) -> None:
    """The summary of a run (`wid.pipelines.report.Report`), batch or
    stream, and a few rows of the target."""
    table = Table(title=title(report, what), show_header=False)
    table.add_column(no_wrap=True)  # what each row counts: the longest label fits in 80 columns
    table.add_column(overflow="fold")  # counts, paths: a path too long for the line is folded, never cut
    if real_time:
        table.add_row("rows counted", "no: Spark's real-time mode keeps no per-row accounting (see the docs)")
        _places(table, report)
        return
    _counts(table, report)
    _places(table, report)
    if rows:
        preview(rows, f"first rows of {report.target}")


def _counts(table: Table, report: Any) -> None:
    done = "joined (both sides)" if report.kind == "join" else "aggregated"
    table.add_row("rows in" + (" (both sides)" if report.kind == "join" else ""), f"{report.rows_in:,}")
    table.add_row(f"rows {done}", f"{report.rows_aggregated:,}")
    table.add_row("rows rejected (dead letter)", f"{report.rows_rejected:,}")
    for reason, n in sorted(report.rejected_by_reason.items()):
        table.add_row(f"  {reason}", f"{n:,}")
    table.add_row("rows late (dropped / dead letter)", f"{report.rows_late_dropped:,} / {report.rows_late_dlq:,}")
    where = " in every micro-batch" if report.streaming else ""
    table.add_row(f"rows in = rejected + late + {done.split()[0]}",
                  f"{report.rows_in:,} = {report.rows_rejected:,} + "
                  f"{report.rows_late_dropped + report.rows_late_dlq:,} + {report.rows_aggregated:,}  "
                  f"{'holds' if report.identity_holds else 'VIOLATED'}{where}")
    if report.punctuations:
        table.add_row("punctuations (not data, not aggregated)", f"{report.punctuations:,}")
    if report.streaming:
        table.add_row("micro-batches", f"{len(report.batches)}")
    table.add_row("rows written" if report.kind == "join" else "windows written",
                  f"{report.windows_emitted:,}" if report.windows_emitted is not None else "?")
    if report.rows_refused:
        table.add_row("rows the target could not hold (dead letter)", f"{report.rows_refused:,}")
    held = open_windows(report)
    if held:
        table.add_row("still open", held)


def open_windows(report: Any) -> str:
    """What a stream that stopped still holds open in its checkpoint, and
    why ("" when nothing): partial results of windows (panes, for hopping
    windows) per group that end after the watermark, so they wait for rows
    that move it past their end; the next run resumes them."""
    last = report.batches[-1] if report.streaming and report.batches else None
    if last is None or not last.state_groups:
        return ""
    wm = datetime.fromtimestamp(last.watermark_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    return (f"{last.state_groups:,} (window or pane, group) partials: they end after the watermark {wm}Z, so "
            "they wait in the checkpoint for rows that move it past their end; the next run resumes them")


def _places(table: Table, report: Any) -> None:
    """Where a run's results, dead letters and checkpoint are, and how long it took; prints `table`."""
    table.add_row("results", shown(report.target))
    table.add_row("dead letters", shown(report.dead_letter))
    if report.checkpoint:
        table.add_row("checkpoint", shown(report.checkpoint))
    for note in getattr(report, "notes", ()):
        if note.startswith("rows the target refused"):
            table.add_row("note", shown(note))
    table.add_row("elapsed", f"{report.elapsed_s:.1f} s")
    console.print(table)


def preview(rows: list[dict[str, Any]], heading: str) -> None:
    """`rows` as a table whose names and values are never cut: timestamps
    whole on one line (`when`), names on one line; when such a table is
    wider than the terminal, one block per row instead (each column's name
    and value on a line, as psql's expanded display), long values folded
    onto further lines. Names and values are printed as text
    (`wid.terminal.shown`)."""
    cells = [[shown(f"{v:.3f}" if isinstance(v, float) else when(v)) for v in r.values()] for r in rows]
    names = [shown(n) for n in rows[0]]
    widths = [max(len(n), *(len(c[i]) for c in cells)) for i, n in enumerate(names)]
    if sum(widths) + 3 * len(widths) + 1 > console.width:
        say(heading)
        for number, c in enumerate(cells, 1):
            say(f"-[ row {number} ]-")
            for name, value in zip(names, c, strict=True):
                console.print(Text.assemble((f"{name:<{max(map(len, names))}}", "bold"), " ", value), overflow="fold")
        return
    table = Table(title=shown(heading))
    for name, width in zip(names, widths, strict=True):
        table.add_column(name, no_wrap=True, min_width=width)
    for c in cells:
        table.add_row(*c)
    console.print(table)


def rejections_warnings(report: Any, share: float, window: Any, shown: int = 3) -> int:
    """Warn, one line each, about the batches of `report` that rejected
    more than `share` of their rows (the first `shown` of them, then how
    many more), with the first rejected value and a fix
    (`wid.pipelines.rejections`); returns how many there were."""
    from wid.pipelines.rejections import warning

    found = report.rejections(share)
    time_column = getattr(window, "event_time_column", None)
    for r in found[:shown]:
        say("warning: " + warning(r, share, time_column), style="yellow", err=True)
    if len(found) > shown:
        say(f"warning: {len(found) - shown} more micro-batches rejected more than {100 * share:g} % of their rows",
            style="yellow", err=True)
    return len(found)


def doctor_lines(checks: list[Any]) -> None:
    """``wid doctor``'s checks (`wid.doctor.Check`), one line each (its
    status, what it checks, what was found), and its fix on the next,
    indented: lines wrap at the terminal's width, never cut."""
    styles = {"ok": "green", "missing": "red", "optional": "yellow"}
    say("wid doctor", style="bold")
    for c in checks:
        console.print(Text.assemble((f"{c.status:<9}", styles[c.status]), f"{c.name}: {c.found}"))
        if c.fix:
            say(f"{'':9}fix: {c.fix}")


def explanation(spec: Any, ex: Any, join: bool, plan: bool) -> None:
    """``wid explain``'s text for `ex` (`wid.spark.explain.Explanation`)."""
    say(f"pipeline {spec.name}", style="bold")
    if join:
        say(f"  sources: left {spec.join.left}, right {spec.join.right} -> window join -> {spec.target.kind}")
    else:
        pre = "[transform] sql -> " if spec.transform_sql else ""
        say(f"  source: {spec.source.format} -> {pre}window -> {spec.target.kind}")
    say(f"  {'join' if join else 'window'} stage ({ex.kind}): {ex.form}")
    say(f"    why: {ex.why}")
    for note in ex.notes:
        say(f"    note: {note}")
    say(f"    state: {ex.state}")
    if ex.operators:
        ops = ", ".join(f"{n} {op}" for op, n in sorted(ex.operators.items()))
        say(f"    Spark operators: {ops} ({ex.operators.get('Exchange', 0)} shuffle(s))")
    say("  may lose or duplicate data:" if ex.warnings else "  may lose or duplicate data: no")
    for w in ex.warnings:
        say(f"    - {w}")
    if plan and ex.physical_plan:
        say(ex.physical_plan)


__all__ = ["batch_line", "console", "doctor_lines", "rejections_warnings", "err_console", "explanation", "open_windows", "preview", "say", "summary",
           "title", "when"]
