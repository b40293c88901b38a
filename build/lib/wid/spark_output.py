"""Keeping Spark's own output out of the terminal.

The JVM that PySpark starts, and the Python workers Spark starts, write to
the file descriptors they inherit: log4j warnings at start-up, a line per
task failure, PySpark's transformWithState prints at every query start.
`SparkOutput` points descriptors 1 and 2 at a log file before Spark starts,
and keeps wid's own output (``sys.stdout``, ``sys.stderr``, which the
command line's consoles write to) on the terminal. With ``verbose`` it does
nothing: Spark prints as it always does.

Each command that starts Spark gets its own log, ``wid-spark-*.log`` in the
temporary directory (`tempfile.gettempdir`, ``TMPDIR``), whose path an
error names. They are kept bounded: as a new one is made, the user's logs
beyond the newest `KEEP_LOGS` (by last write, so a log a running stream
still writes counts as new) are removed; other users' files are never
touched.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path
from types import TracebackType

KEEP_LOGS = 20  # Spark logs kept in the temporary directory, the newest ones


class SparkOutput:
    """Context manager; `path` is the log file (None when nothing was
    moved: ``verbose``, or standard streams without file descriptors, as
    under a test runner)."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self.path: str | None = None
        self._saved: list[tuple[int, int]] = []
        self._streams = (sys.stdout, sys.stderr)

    def __enter__(self) -> SparkOutput:
        if self.verbose:
            return self
        try:
            fds = [sys.stdout.fileno(), sys.stderr.fileno()]
        except (AttributeError, io.UnsupportedOperation, ValueError):
            return self
        sys.stdout.flush()
        sys.stderr.flush()
        handle, self.path = tempfile.mkstemp(prefix="wid-spark-", suffix=".log")
        prune_logs(Path(self.path).parent)
        for fd in fds:
            self._saved.append((fd, os.dup(fd)))
            os.dup2(handle, fd)
        os.close(handle)
        # wid's own streams stay on the terminal: new file objects over the saved descriptors
        sys.stdout = os.fdopen(os.dup(self._saved[0][1]), "w", buffering=1, encoding="utf-8", errors="replace")
        sys.stderr = os.fdopen(os.dup(self._saved[1][1]), "w", buffering=1, encoding="utf-8", errors="replace")
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        if not self._saved:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):
                stream.flush()
                stream.close()
        for fd, saved in self._saved:
            os.dup2(saved, fd)
            os.close(saved)
        sys.stdout, sys.stderr = self._streams
        self._saved = []


def prune_logs(directory: Path, keep: int = KEEP_LOGS) -> list[Path]:
    """Remove this user's ``wid-spark-*.log`` files in `directory` beyond
    the newest `keep` (by modification time); returns those removed. A file
    that cannot be removed (gone already, not ours) is left."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    logs = []
    for path in directory.glob("wid-spark-*.log"):
        with contextlib.suppress(OSError):
            stat = path.stat()
            if uid is None or stat.st_uid == uid:
                logs.append((stat.st_mtime, path))
    removed = []
    for _, path in sorted(logs, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed


__all__ = ["KEEP_LOGS", "SparkOutput", "prune_logs"]
