"""Following a running stream to its end: each micro-batch's tally as it
lands, a notice while a micro-batch stalls, and Ctrl-C.

- **Ctrl-C once** (SIGINT): the micro-batch running when it came finishes
  and commits, then the query stops. A backlog makes Spark start the next
  micro-batch at once; if it has, that one is stopped uncommitted and a
  rerun replays it (every keyed sink overwrites what it wrote). PySpark's
  own handler would cancel the running micro-batch's jobs instead.
- **Ctrl-C again** while waiting: the query is stopped at once, the
  running micro-batch uncommitted (it replays on a rerun). A stop that
  Spark cannot finish at once (a sink write inside the micro-batch, which
  it cannot interrupt) is left to end on its own after `STOP_WAIT_S`.
- **A stalled micro-batch** (running longer than `StallWatch.after_s`, then
  each time its wait has doubled) is named in a notice with Spark's own
  status message (``query.status["message"]``, e.g. ``Getting offsets from
  KafkaV2[Subscribe[clicks]]``) and the Kafka brokers the pipeline uses.

Everything here uses the query's public API (``awaitTermination``,
``status``, ``recentProgress``, ``stop``), so it serves Spark Connect too.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming.query import StreamingQuery

from wid.errors import WidError
from wid.io import kafka
from wid.pipelines.metrics import Metrics
from wid.pipelines.report import BatchTally, Report
from wid.spark.errors import translate
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec

LOG = logging.getLogger("wid")
POLL_S = 1.0  # how often the query's progress is read
INTERRUPTED_POLL_S = 0.1  # ... after Ctrl-C, to stop soon after the running micro-batch commits
STOP_WAIT_S = 3.0  # how long a second Ctrl-C waits for the query to stop
STALL_NOTICE_S = 30.0  # a micro-batch running longer is named in a notice


class Interrupts:
    """The SIGINTs received inside `interrupts` (`count`), each of which
    also sets `wake`, so that a wait on it ends at once."""

    def __init__(self) -> None:
        self.count = 0
        self.wake = threading.Event()

    def __call__(self, *_: object) -> None:
        self.count += 1
        self.wake.set()

    def is_set(self) -> bool:
        """Whether a SIGINT came."""
        return self.count > 0


@contextmanager
def interrupts() -> Iterator[Interrupts]:
    """SIGINT counted instead of raising KeyboardInterrupt while inside (on
    the main thread; elsewhere signals cannot be handled, and none is
    counted)."""
    got = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    previous = signal.signal(signal.SIGINT, got)
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class StallWatch:
    """Names a micro-batch that runs longer than `after_s` seconds, through
    `on_notice`: which one, for how long, Spark's status message, and
    `waits_on` (the Kafka brokers the pipeline reads or writes, see
    `kafka_brokers`). Again each time its running time has doubled. A
    micro-batch is timed from the first `look` that finds a trigger active
    after the last completed micro-batch `seen`."""

    on_notice: Callable[[str], None]
    after_s: float = STALL_NOTICE_S
    waits_on: str = ""
    _since: float | None = field(default=None, init=False)
    _seen: int = field(default=-1, init=False)
    _next: float = field(default=0.0, init=False)

    def look(self, status: Mapping[str, Any], seen: int, now: float) -> None:
        """Look at the query's `status` at `now` (monotonic seconds), `seen`
        the last micro-batch that completed (-1: none in this run)."""
        if not status.get("isTriggerActive"):
            self._since = None
            return
        if self._since is None or seen != self._seen:
            self._since, self._seen, self._next = now, seen, now + self.after_s
            return
        if now >= self._next:
            running = now - self._since
            which = f"micro-batch {seen + 1}" if seen >= 0 else "the run's first micro-batch"
            waits = f"; {self.waits_on}" if self.waits_on else ""
            self.on_notice(f"{which} has been running for {running:.0f} s; Spark's status: "
                           f"{status.get('message')}{waits}")
            self._next = now + running


def kafka_brokers(spec: PipelineSpec | JoinPipelineSpec) -> str:
    """The Kafka brokers a pipeline's sources, target and dead letter use,
    for a stall notice (`StallWatch.waits_on`); "" when none is Kafka."""
    found = [f"source {kafka.reader_options(s).get('kafka.bootstrap.servers')}" for s in spec.sources
             if s.format == "kafka"]
    found += [f"{role} {kafka.writer_options(sink).get('kafka.bootstrap.servers')}"
              for role, sink in (("target", spec.target), ("dead letter", spec.dead_letter)) if sink.kind == "kafka"]
    return f"Kafka brokers: {', '.join(found)}" if found else ""


class _Tallies:
    """Each micro-batch's tally, once, from the query's recent progress,
    to `report`, `metrics` and `on_progress`; `seen` is the last one."""

    def __init__(self, report: Report, tally_of: Callable[[Any], BatchTally], metrics: Metrics | None,
                 on_progress: Callable[[BatchTally], None]) -> None:
        self.report, self.tally_of, self.metrics, self.on_progress = report, tally_of, metrics, on_progress
        self.seen = -1

    def take(self, query: StreamingQuery) -> None:
        for progress in query.recentProgress:
            if int(progress.batchId) > self.seen:
                self.seen = int(progress.batchId)
                got = self.tally_of(progress)
                self.report.batches.append(got)
                if self.metrics is not None:
                    self.metrics.batch(got, progress)
                self.on_progress(got)


class _Stop:
    """A query's stop on a thread of its own: Spark's stop waits for the
    running micro-batch's sink write, which it cannot interrupt."""

    def __init__(self, query: StreamingQuery) -> None:
        self.query = query
        self.since: float | None = None  # when the stop was asked for (monotonic s)

    def ask(self) -> None:
        if self.since is None:
            self.since = time.monotonic()
            threading.Thread(target=self._stop, name="wid-stop", daemon=True).start()

    def _stop(self) -> None:
        try:
            self.query.stop()
        except Exception as err:  # noqa: BLE001 - the query is going away; its own error is reported by the loop
            LOG.debug("stopping the stream: %s", type(err).__name__)


def _wake_at_end(query: StreamingQuery, wake: threading.Event) -> None:
    """Set `wake` when `query` ends (on a thread of its own)."""
    def wait() -> None:
        try:
            query.awaitTermination()
        except Exception:  # noqa: BLE001, S110 - the loop reads the query's error itself
            pass
        finally:
            wake.set()
    threading.Thread(target=wait, name="wid-await", daemon=True).start()


def follow(query: StreamingQuery, report: Report, tally_of: Callable[[Any], BatchTally],
           metrics: Metrics | None, on_progress: Callable[[BatchTally], None], *,
           on_notice: Callable[[str], None] = LOG.info, stall: StallWatch | None = None) -> None:
    """Wait for `query` to stop, adding each micro-batch's tally (from its
    progress, by `tally_of`) to `report`, `metrics` and `on_progress`, and
    telling `stall` how the running micro-batch fares. Ctrl-C stops it as
    the module docstring says (`report.interrupted`), and the first one
    that has a micro-batch to wait for says so through `on_notice`. Spark
    errors a user can fix become wid's errors. Stops the query on the way
    out."""
    tallies, stop = _Tallies(report, tally_of, metrics, on_progress), _Stop(query)
    with interrupts() as got:
        _wake_at_end(query, got.wake)
        try:
            stop_after: int | None = None  # after Ctrl-C: the micro-batch to wait for
            while query.isActive:
                got.wake.wait(INTERRUPTED_POLL_S if got.count else POLL_S)
                got.wake.clear()
                tallies.take(query)
                status = query.status
                if got.count:
                    if stop_after is None:
                        stop_after = _stop_after(tallies.seen, bool(status["isTriggerActive"]), on_notice)
                    if got.count > 1 or tallies.seen >= stop_after or not status["isTriggerActive"]:
                        report.interrupted = True
                        stop.ask()
                    if got.count > 1 and stop.since is not None and time.monotonic() - stop.since > STOP_WAIT_S:
                        return  # the stop goes on by itself; nothing of the micro-batch is committed
                elif stall is not None:
                    stall.look(status, tallies.seen, time.monotonic())
            _ended(query, stopped=stop.since is not None)
            tallies.take(query)
        except WidError:
            raise
        except Exception as err:
            raise (translate(err) or err) from None
        finally:
            if stop.since is None and query.isActive:
                query.stop()


def _stop_after(seen: int, running: bool, on_notice: Callable[[str], None]) -> int:
    """The micro-batch a Ctrl-C waits for: the running one (after `seen`,
    the last one completed), said through `on_notice`, or none."""
    if not running:
        return seen
    which = f"micro-batch {seen + 1}" if seen >= 0 else "the run's first micro-batch"
    on_notice(f"Ctrl-C: the stream stops after {which}; Ctrl-C again stops it now (that micro-batch then "
              "replays on a rerun)")
    return seen + 1


def _ended(query: StreamingQuery, stopped: bool) -> None:
    """Raise the error `query` ended with, unless it was `stopped` by
    Ctrl-C: the micro-batch that stop interrupted replays on a rerun."""
    try:
        query.awaitTermination(1)
    except Exception as err:
        if not stopped:
            raise
        LOG.debug("the stop interrupted a micro-batch: %s", type(err).__name__)


__all__ = ["STALL_NOTICE_S", "Interrupts", "StallWatch", "follow", "interrupts", "kafka_brokers"]
