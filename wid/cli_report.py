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

from wid.terminal import Terminal, fold_path, shown

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


# The widest label the summary's table holds ("rows the target could not hold (dead letter)"): with the table's
# borders and a value column of `VALUE_MIN` it fits 80 columns. A label wider (a long reject reason) goes below.
LABEL_MAX = 44
VALUE_MIN = 28
BORDERS = 7  # "│ " + " │ " + " │"


def summary(report: Any, what: str, rows: list[dict[str, Any]], real_time: bool = False) -> None:
    """The summary of a run (`wid.pipelines.report.Report`), batch or
    stream, and a few rows of the target. It fits the terminal down to 80
    columns: the counts always show, reject reasons too long for the
    label column are listed below the table, and paths fold between their
    folders (`wid.terminal.fold_path`), never inside a name."""
    if real_time:
        lines = [("rows counted", "no: Spark's real-time mode keeps no per-row accounting (see the docs)")]
        below: list[tuple[str, str]] = []
    else:
        lines, below = _counts(report)
    lines += _places(report)
    label = max(len(k) for k, _ in lines)
    width = max(VALUE_MIN, console.width - label - BORDERS)
    table = Table(title=title(report, what), show_header=False)
    table.add_column(no_wrap=True, min_width=label)
    table.add_column(overflow="fold", max_width=width)  # wrapped by Rich; paths come pre-folded at separators
    for key, value in lines:
        table.add_row(key, fold_path(value, width))
    console.print(table)
    if below:
        say("rows rejected, by reason:")
        for reason, n in below:
            item(f"  {n:>{max(len(c) for _, c in below)}}  ", reason)
    if rows and not real_time:
        preview(rows, f"first rows of {report.target}")


def item(lead: str, text: str, style: str | None = None) -> None:
    """`lead` then `text`, wrapped by Rich at the terminal's width between
    words, each further line under the text's first character."""
    grid = Table.grid()
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(lead, text, style=style)
    console.print(grid)


def _counts(report: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The summary's count rows (label, value), and the reject reasons too
    long for a label (reason, count)."""
    done = "joined (both sides)" if report.kind == "join" else "aggregated"
    out = [("rows in" + (" (both sides)" if report.kind == "join" else ""), f"{report.rows_in:,}"),
           (f"rows {done}", f"{report.rows_aggregated:,}"),
           ("rows rejected (dead letter)", f"{report.rows_rejected:,}")]
    reasons = sorted(report.rejected_by_reason.items())
    out += [(f"  {reason}", f"{n:,}") for reason, n in reasons if len(reason) + 2 <= LABEL_MAX]
    below = [(reason, f"{n:,}") for reason, n in reasons if len(reason) + 2 > LABEL_MAX]
    out.append(("rows late (dropped / dead letter)", f"{report.rows_late_dropped:,} / {report.rows_late_dlq:,}"))
    where = " in every micro-batch" if report.streaming else ""
    out.append((f"rows in = rejected + late + {done.split()[0]}",
                f"{report.rows_in:,} = {report.rows_rejected:,} + "
                f"{report.rows_late_dropped + report.rows_late_dlq:,} + {report.rows_aggregated:,}  "
                f"{'holds' if report.identity_holds else 'VIOLATED'}{where}"))
    if report.punctuations:
        out.append(("punctuations (not data, not aggregated)", f"{report.punctuations:,}"))
    if report.streaming:
        out.append(("micro-batches", f"{len(report.batches)}"))
    out.append(("rows written" if report.kind == "join" else "windows written",
                f"{report.windows_emitted:,}" if report.windows_emitted is not None else "?"))
    if report.rows_refused:
        out.append(("rows the target could not hold (dead letter)", f"{report.rows_refused:,}"))
    held = open_windows(report)
    if held:
        out.append(("still open", held))
    return out, below


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


def _places(report: Any) -> list[tuple[str, str]]:
    """Where a run's results, dead letters and checkpoint are, and how long
    it took: the summary's last rows."""
    out = [("results", shown(report.target)), ("dead letters", shown(report.dead_letter))]
    if report.checkpoint:
        out.append(("checkpoint", shown(report.checkpoint)))
    out += [("note", shown(note)) for note in getattr(report, "notes", ()) if note.startswith("rows the target refused")]
    out.append(("elapsed", f"{report.elapsed_s:.1f} s"))
    return out


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
    """``wid explain``'s text for `ex` (`wid.spark.explain.Explanation`),
    each item wrapped to the terminal between words (`item`); Spark's
    physical plan as Spark prints it."""
    say(f"pipeline {spec.name}", style="bold")
    if join:
        item("  sources: ", f"left {spec.join.left}, right {spec.join.right} -> window join -> {spec.target.kind}")
    else:
        pre = "[transform] sql -> " if spec.transform_sql else ""
        item("  source: ", f"{spec.source.format} -> {pre}window -> {spec.target.kind}")
    item(f"  {'join' if join else 'window'} stage ", f"({ex.kind}): {ex.form}")
    item("    why: ", ex.why)
    for note in ex.notes:
        item("    note: ", note)
    item("    state: ", ex.state)
    if ex.operators:
        ops = ", ".join(f"{n} {op}" for op, n in sorted(ex.operators.items()))
        item("    Spark operators: ", f"{ops} ({ex.operators.get('Exchange', 0)} shuffle(s))")
    say("  may lose or duplicate data:" if ex.warnings else "  may lose or duplicate data: no")
    for w in ex.warnings:
        item("    - ", w)
    if plan and ex.physical_plan:
        say(ex.physical_plan)


__all__ = ["batch_line", "console", "doctor_lines", "err_console", "explanation", "item", "open_windows", "preview",
           "rejections_warnings", "say", "summary", "title", "when"]
