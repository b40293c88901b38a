"""Crash recovery, tested where it bites: `wid run` is killed with SIGKILL
(its whole process group, the JVM included) at chosen moments of its
checkpoint, restarted, and finally run to the end; the sinks must then hold
exactly what the streaming oracle says an uninterrupted run writes, computed
from the landed files, not from another wid run.

Kill points, watched on the run's files every millisecond:

- ``after-commit k``: as soon as Spark's commit log holds micro-batch k;
- ``in-batch k``: as soon as the offset log holds micro-batch k while the
  commit log does not: the micro-batch is being read, computed or written;
- ``in-sink-write k``: while micro-batch k's SQLite write transaction is
  open (its rollback journal exists; the stream is wide enough that a
  micro-batch writes thousands of windows).

After each kill, `landed` reads the files the kill left and says where it
actually landed; the tests assert it is where they aimed.

The stream (`make_stream`): JSON files read one per micro-batch, with
disorder, a few malformed lines and, from the third file on, a few rows two
minutes behind (late whichever way a restart groups files: Spark's file
source logs the file it picks before the query logs its micro-batch, so a
kill between the two makes the next micro-batch take that file and a new
one); under ``reopen``, more rows 20 s behind, within `allowed_lateness_ms`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fixtures import COLUMNS, HOPPING, T0, pipeline_toml
from tests.sink_check import Row, assert_same_rows, dead_letters, read_table, stream_outcome
from wid.pipelines.read import checkpoint_of
from wid.spec.toml_io import load_pipeline


def make_stream(root: Path, files: int, rows_per_file: int, rng: random.Random, extent: str = HOPPING,
                keys: int = 4) -> list[list[Row | str]]:
    """Write the pipeline (window `extent`) and its landing directory; return
    the files' records in order (a string is a malformed line)."""
    land = root / "land"
    land.mkdir(parents=True)
    (root / "pipeline.toml").write_text(pipeline_toml(extent, cap=max(1000, keys)))
    reopen = 'late_data = "reopen"' in extent
    spacing = 28_000 // rows_per_file or 1  # each file spans about 28 s of event time
    out: list[list[Row | str]] = []
    for f in range(files):
        records: list[Row | str] = []
        for i in range(rows_per_file):
            ts = T0 + (f * rows_per_file + i) * spacing + rng.randrange(-3_000, 1)
            draw = rng.random()
            if draw < 0.03 and f >= 2:
                ts -= 120_000  # late beyond the lateness (and beyond allowed_lateness_ms)
            elif reopen and draw < 0.06:
                ts -= 20_000  # behind the watermark, within allowed_lateness_ms
            records.append({"k": f"k{rng.randrange(keys)}", "ts": ts, "v": float(rng.randrange(100))})
        if rng.random() < 0.3:
            records.append('{"k": "a", "ts": "broken", "v": 1.0}')
        path = land / f"part-{f:04d}.json"
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
        os.utime(path, (1_000_000 + f, 1_000_000 + f))
        out.append(records)
    return out


ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable}


def command(root: Path) -> list[str]:
    return [sys.executable, "-m", "wid.cli", "run", "--quiet", str(root / "pipeline.toml")]


def finish(root: Path) -> None:
    """Run the pipeline to the end; raise with its output if it fails."""
    done = subprocess.run(command(root), cwd=root, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"wid run failed in {root}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def checkpoint(root: Path) -> Path:
    """The checkpoint of the pipeline in `root` (``<name>.checkpoint`` beside it)."""
    return Path(checkpoint_of(load_pipeline(root / "pipeline.toml")))


@dataclass(frozen=True)
class KillAt:
    """Where to kill: `phase` (``after-commit``, ``in-batch``,
    ``in-sink-write``) of micro-batch `batch`."""

    phase: str
    batch: int

    def reached(self, root: Path, ck: Path) -> bool:
        """Whether the run in `root`, with checkpoint `ck`, is at this point."""
        committed = (ck / "commits" / str(self.batch)).exists()
        if self.phase == "after-commit":
            return committed
        running = (ck / "offsets" / str(self.batch)).exists() and not committed
        return running and (self.phase == "in-batch" or (root / "out.sqlite-journal").exists())


def landed(root: Path, batch: int) -> str:
    """Where a kill landed, read from the files it left: ``in-sink-write``
    (a hot SQLite journal), ``in-batch`` (micro-batch `batch` logged, not
    committed), or ``after-commit``."""
    ck = checkpoint(root)
    if (ck / "commits" / str(batch)).exists():
        return "after-commit"
    if (root / "out.sqlite-journal").exists():
        return "in-sink-write"
    return "in-batch" if (ck / "offsets" / str(batch)).exists() else "before the micro-batch"


def kill_at(root: Path, point: KillAt, timeout_s: float = 300) -> tuple[str, bool] | None:
    """Start `wid run` and SIGKILL it at `point`; returns where it landed and
    whether a micro-batch had committed before it, or None when the run
    ended before reaching it."""
    ck = checkpoint(root)
    if not killed_when(command(root), root, ENV, lambda: point.reached(root, ck), timeout_s):
        return None
    return landed(root, point.batch), (ck / "commits" / "0").exists()


def killed_when(argv: list[str], cwd: Path, env: dict[str, str], reached: Callable[[], bool],
                timeout_s: float) -> bool:
    """Start `argv` in its own process group and SIGKILL the group (the JVM
    and Python workers included) as soon as `reached()`, watched every
    millisecond; False when the process ended first or `timeout_s` passed."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + timeout_s
    try:
        while not reached():
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def sink_tables(root: Path) -> dict[str, list[tuple[object, ...]]]:
    """Both tables' rows, with the run's own directory cut out of file names
    and without the dead letters' batch id (a restart that groups two files
    into one micro-batch numbers every later one lower)."""
    def local(v: object) -> object:
        return v.replace(str(root.resolve()), "") if isinstance(v, str) else v
    return {t: sorted((tuple(local(v) for c, v in r.items() if c != "batch_id")
                       for r in read_table(str(root / "out.sqlite"), t)), key=repr) for t in ("windows", "dead_letter")}


def compare(root: Path, batches: list[list[Row | str]]) -> dict[str, Any]:
    """The sinks after the run against the streaming oracle over the files:
    counts of rows missing or extra in each table, and whether the dead
    letters hold each rejected, late and malformed record exactly once
    (its occurrences)."""
    window = load_pipeline(root / "pipeline.toml").window
    db = str(root / "out.sqlite")
    written = read_table(db, "windows")
    results, want_rows, want_dead = stream_outcome(window, batches, COLUMNS, list(written[0]) if written else [])
    try:
        assert_same_rows(window, written, want_rows)
        windows_equal = True
    except AssertionError:
        windows_equal = False
    got_dead = dead_letters(read_table(db, "dead_letter"))
    return {"windows_equal": windows_equal, "windows": len(written), "oracle_windows": len(want_rows),
            "dead_equal": got_dead == want_dead, "dead_missing": sum((want_dead - got_dead).values()),
            "dead_extra": sum((got_dead - want_dead).values()),
            "rows_rejected": sum(n for (reason, _), n in got_dead.items() if not reason.startswith("late")),
            "oracle_late": sum(r.rows_late_dropped + r.rows_late_dlq for r in results)}


def crash_run(root: Path, seed: int, kills: list[KillAt], files: int = 12, rows_per_file: int = 40,
              extent: str = HOPPING, keys: int = 4) -> dict[str, Any]:
    """Land a stream, kill `wid run` at each of `kills` in turn (restarting
    it each time), run it to the end, and compare its sinks with the
    oracle's. Returns `compare`'s counts and ``landed``: where each kill
    landed (None: the run ended first)."""
    batches = make_stream(root, files, rows_per_file, random.Random(seed), extent, keys)
    spots = [kill_at(root, point) for point in kills]
    finish(root)
    return {**compare(root, batches), "landed": [s and s[0] for s in spots],
            "after_commit": [bool(s and s[1]) for s in spots], "aimed": [k.phase for k in kills]}


def tally(results: list[dict[str, Any]]) -> Counter[str]:
    """Runs that matched the oracle and kills that landed after a commit."""
    out: Counter[str] = Counter()
    for r in results:
        out["runs"] += 1
        out["matched"] += int(r["windows_equal"] and r["dead_equal"])
        out["kills"] += sum(spot is not None for spot in r["landed"])
        out["after a commit"] += sum(r["after_commit"])
        out["landed as aimed"] += sum(spot == aim for spot, aim in zip(r["landed"], r["aimed"], strict=True))
    return out
