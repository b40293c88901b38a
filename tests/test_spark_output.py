"""Spark's log files: one per command, and only the newest few kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from wid.spark_output import KEEP_LOGS


def test_old_logs_are_pruned_when_a_command_starts(tmp_path: Path) -> None:
    old = [tmp_path / f"wid-spark-old{i:02d}.log" for i in range(KEEP_LOGS + 5)]
    for i, path in enumerate(old):
        path.write_text("old")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # old[-1] is the newest
    others = [tmp_path / "wid-spark-notes.txt", tmp_path / "other.log"]
    for path in others:
        path.write_text("not ours")
        os.utime(path, (1, 1))
    code = "from wid.spark_output import SparkOutput; SparkOutput().__enter__(); print('moved')"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "TMPDIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "moved", done.stderr
    logs = sorted(tmp_path.glob("wid-spark-*.log"))
    new = [p for p in logs if p not in old]
    assert len(new) == 1 and len(logs) == KEEP_LOGS
    assert set(logs) - set(new) == set(old[-(KEEP_LOGS - 1):])  # the newest old ones stay
    assert all(p.exists() for p in others)
