"""A live progress display for long Spark work: the current step and, on a
Spark Connect session, the running Spark stages' task counts (from the
progress the server streams to the client with each operation). A classic
session offers its task counts only through the driver's JVM (the status
tracker), which wid does not touch, so there the display is the step and
the time spent."""

from __future__ import annotations

from collections.abc import Iterable
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

from wid.spark.spark_session import is_connect
from wid.terminal import Terminal


class SparkProgress:
    """Context manager: ``with SparkProgress(spark) as p: p.step("reading")``.

    On a Spark Connect session it registers a progress handler
    (``SparkSession.registerProgressHandler``, PySpark 4.0+) for the time it
    is entered and shows the operation's completed and total tasks; it only
    reads, so it never changes what Spark computes."""

    def __init__(self, spark: Any, console: Console | None = None, enabled: bool = True) -> None:
        self.spark = spark
        self.enabled = enabled
        self.connect = enabled and is_connect(spark)
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}", markup=False), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console or Terminal(stderr=True),
                                 transient=True)
        self.task = self.progress.add_task("starting", total=None)
        self._label = "starting"

    def step(self, label: str) -> None:
        """Name the step now running."""
        self._label = label
        self.progress.update(self.task, description=label, total=None, completed=0)

    def _on_progress(self, stages: Iterable[Any] | None = None, *_: Any, **__: Any) -> None:
        """A Connect progress update: the tasks of the operation's stages."""
        known = list(stages or [])
        total = sum(s.num_tasks for s in known)
        if total:
            done = sum(s.num_completed_tasks for s in known)
            self.progress.update(self.task, description=f"{self._label} (Spark tasks)", total=total, completed=done)

    def __enter__(self) -> SparkProgress:
        if self.enabled:
            self.progress.start()
        if self.connect:
            self.spark.registerProgressHandler(self._on_progress)
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        if self.connect:
            self.spark.removeProgressHandler(self._on_progress)
        if self.enabled:
            self.progress.stop()
