"""Prometheus metrics for streaming pipelines (docs/semantics.md#pipelines), served
with `prometheus-client` and fed from each micro-batch's
``StreamingQueryProgress`` and wid's own exact counts
(`wid.pipelines.report.BatchTally`).

- ``wid_rows_in_total``, ``wid_rows_rejected_total``: rows read, and rows
  sent to the dead letters with a reason;
- ``wid_late_rows_total{policy}``: late rows, by late-data policy;
- ``wid_windows_emitted_total{kind}``: window rows emitted to the target;
- ``wid_windows_active``: windows (panes, for the WID operator's hopping
  windows) held in the window stage's state;
- ``wid_state_groups``: rows (group x window or pane) across all state stores;
- ``wid_watermark_seconds{source}``: event-time watermark, epoch seconds,
  per source and ``source="_global"`` (their minimum);
- ``wid_batch_duration_seconds``: a histogram of micro-batch durations (its
  ``_count`` counts micro-batches);
- ``wid_last_batch_timestamp_seconds``: when the last micro-batch ended,
  epoch seconds (a stream that stopped making progress stops moving it);
- ``wid_trigger_interval_seconds``: the stream's trigger interval (0 for
  ``available-now`` and ``once``), to compare micro-batch durations with.

docs/how-to/monitoring.md shows a Grafana dashboard and alert rules over
these (tests check that every metric they name is one served here).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from wid.pipelines.report import BatchTally


class Metrics:
    """One pipeline's metrics in their own registry (so several pipelines,
    or tests, can run in one process)."""

    BATCH_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)  # histogram buckets

    def __init__(self, pipeline: str, kind: str, late_policy: str, sources: tuple[str, ...] = ("source",),
                 trigger_s: float = 0.0) -> None:
        self.registry = CollectorRegistry()
        self.kind, self.policy, self.sources = kind, late_policy, sources
        self.port: int | None = None  # the port `serve` serves on
        r, ns = self.registry, "wid"
        self.rows_in = Counter("rows_in", f"Rows read by pipeline {pipeline}", registry=r, namespace=ns)
        self.rows_rejected = Counter("rows_rejected", "Rows sent to the dead letters with a reason", registry=r, namespace=ns)
        self.late = Counter("late_rows", "Late rows, by late-data policy", ["policy"], registry=r, namespace=ns)
        self.emitted = Counter("windows_emitted", "Window rows written to the target", ["kind"], registry=r, namespace=ns)
        self.active = Gauge("windows_active", "Windows held in the window stage's state", registry=r, namespace=ns)
        self.groups = Gauge("state_groups", "Rows held across all state stores", registry=r, namespace=ns)
        self.watermark = Gauge("watermark_seconds", "Event-time watermark (epoch seconds)", ["source"], registry=r, namespace=ns)
        self.duration = Histogram("batch_duration_seconds", "Micro-batch duration", registry=r, namespace=ns,
                                  buckets=self.BATCH_SECONDS)
        self.last_batch = Gauge("last_batch_timestamp_seconds", "When the last micro-batch ended (epoch seconds)",
                                registry=r, namespace=ns)
        Gauge("trigger_interval_seconds", "The stream's trigger interval (0: available-now, once)", registry=r,
              namespace=ns).set(trigger_s)
        self.late.labels(policy=late_policy)
        self.emitted.labels(kind=kind)

    def serve(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve ``/metrics`` over HTTP on `addr`:`port` (0: a free port the
        system picks) from a daemon thread; returns the port it serves on
        (also kept in `port`).
        Raises ValueError for a port outside 0..65535, OSError when the port
        cannot be bound (in use, not allowed)."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port {port!r} is not in 0..65535")
        server, _ = start_http_server(port, addr=addr, registry=self.registry)
        self.port = int(server.server_port)
        return self.port

    def batch(self, tally: BatchTally, progress: Any) -> None:
        """Account one micro-batch. The WID operator reports what it holds
        and each source's watermark; on Spark's own operators they come from
        the progress (Spark keeps one watermark per query)."""
        self.rows_in.inc(tally.rows_in)
        self.emitted.labels(kind=self.kind).inc(tally.windows_written)
        self.rows_rejected.inc(tally.rows_rejected)
        self.late.labels(policy=self.policy).inc(tally.rows_late)
        operators = progress.stateOperators or []
        active = tally.windows_active if tally.windows_active is not None else (
            int(operators[0].numRowsTotal) if operators else 0)
        groups = tally.state_groups if tally.state_groups is not None else sum(
            int(op.numRowsTotal) for op in operators)
        self.active.set(active)
        self.groups.set(groups)
        per_source = dict(tally.source_watermarks_ms)
        for source in self.sources:
            mark = per_source.get(source, tally.watermark_ms) if per_source else tally.watermark_ms
            if mark is not None:
                self.watermark.labels(source=source).set(mark / 1000)
        self.watermark.labels(source="_global").set(tally.watermark_ms / 1000)
        self.duration.observe(tally.duration_ms / 1000)
        self.last_batch.set(time.time())


__all__ = ["Metrics"]
