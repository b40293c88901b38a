"""A live progress display for long Spark work: the current step, and the
running Spark stages' task counts (from Spark's status tracker)."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class SparkProgress:
    """Context manager: ``with SparkProgress(spark) as p: p.step("reading")``.

    A background thread polls the status tracker every `interval_s` seconds;
    it only reads, so it never changes what Spark computes.
    """

    def __init__(self, spark: Any, console: Console | None = None, interval_s: float = 0.25,
                 enabled: bool = True) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.enabled = enabled
        self.interval_s = interval_s
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True)
        self.task = self.progress.add_task("starting", total=None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._label = "starting"

    def step(self, label: str) -> None:
        """Name the step now running."""
        self._label = label
        self.progress.update(self.task, description=label, total=None, completed=0)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval_s):
            total = done = 0
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    total += info.numTasks
                    done += info.numCompletedTasks
            if total:
                self.progress.update(self.task, description=f"{self._label} (Spark tasks)", total=total, completed=done)

    def __enter__(self) -> SparkProgress:
        if self.enabled:
            self.progress.start()
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self.enabled:
            self._thread.join(timeout=2)
            self.progress.stop()
