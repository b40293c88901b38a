"""``wid status``'s output on a terminal (`wid.pipelines.status`): the
micro-batches, the watermarks and what holds them back, the windows held,
the state per shard, the recent history; in 80 columns."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.table import Table

from wid.kernels.fields import END, START
from wid.kernels.operator.held import GROUPS
from wid.pipelines.status import Status
from wid.semantics.timeunits import format_us
from wid.terminal import Terminal, shown

SHOWN_WINDOWS, SHOWN_BATCHES = 8, 10


def _ms(ms: int | None) -> str:
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _us(us: int | None) -> str:
    return "-" if us is None else format_us(us)


def show(status: Status, terminal: Terminal | None = None) -> None:
    """Print `status` as tables."""
    out = terminal or Terminal()
    head = Table(title=shown(f"checkpoint {status.checkpoint}"), show_header=False)
    head.add_column(no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row("last committed micro-batch", "-" if status.committed is None else str(status.committed))
    if status.logged is not None and status.logged != status.committed:
        head.add_row("logged, not committed", f"{status.logged} (running, or cut short: a restart replays it)")
    head.add_row("its time", _ms(status.last_batch_ms))
    if status.history and status.history[-1].batch_id == status.committed:
        e = status.history[-1]
        head.add_row("its rows", f"{e.rows_in:,} in: {e.rows_rejected:,} rejected, "
                                 f"{e.rows_late_dropped + e.rows_late_dlq:,} late, {e.rows_aggregated:,} aggregated")
    head.add_row("global watermark", _us(status.global_watermark_us))
    for line in status.why_waiting(1):
        head.add_row("oldest window", line)
    out.print(head)
    _clocks(out, status)
    _windows(out, status)
    _history(out, status)
    for note in status.notes:
        out.print(shown(f"note: {note}"))


def _clocks(out: Terminal, status: Status) -> None:
    if not status.clocks:
        return
    table = Table(title="watermarks")
    for name in ("source", "partition", "watermark", "last row came", ""):
        table.add_column(name, overflow="fold")
    for c in status.clocks:
        where = "-" if c.partition is None else f"{c.topic}:{c.partition}"
        quiet = status.quiet_for_s(c)
        said = "holds it back" if c.holds_back else (f"idle {quiet:,} s" if c.idle and quiet is not None else "")
        table.add_row(shown(c.source), shown(where), _us(c.watermark_us), _ms(c.last_arrival_ms), said)
    out.print(table)


def _windows(out: Terminal, status: Status) -> None:
    windows = status.windows.sort_by([(GROUPS, "descending"), (START, "ascending")])
    table = Table(title=f"windows held: {windows.num_rows} (largest first)")
    for name in ("start", "end", "groups"):
        table.add_column(name, overflow="fold")
    for row in windows.slice(0, SHOWN_WINDOWS).to_pylist():
        table.add_row(_us(row[START]), _us(row[END]), f"{row[GROUPS]:,}")
    out.print(table)
    if status.shard_bytes:
        sizes = ", ".join(f"{s}: {n:,}" for s, n in status.shard_bytes.items())
        out.print(shown(f"state bytes per shard: {sizes}"))


def _history(out: Terminal, status: Status) -> None:
    if not status.history:
        return
    table = Table(title=f"last {min(SHOWN_BATCHES, len(status.history))} of {len(status.history)} micro-batches")
    for name in ("batch", "ended", "in", "late", "rejected", "ms"):
        table.add_column(name, overflow="fold")
    for e in status.history[-SHOWN_BATCHES:]:
        table.add_row(str(e.batch_id), _ms(e.ended_ms), f"{e.rows_in:,}", f"{e.rows_late_dropped + e.rows_late_dlq:,}",
                      f"{e.rows_rejected:,}", f"{e.duration_ms:,}")
    out.print(table)


__all__ = ["show"]
