"""Checkpoints kept in the repository, one set per released layout of the
WID operator's state (`wid.kernels.operator.shard.LAYOUT`), which CI
restarts with the current code (tests/test_kept_checkpoints.py): an upgrade
of wid under a running stream is tested from every layout, not one step
back.

Each set is made by the code of its release, run as a user runs it
(``python -m wid run``), so this module imports nothing of wid: point
``PYTHONPATH`` at a checkout of that release (a ``git worktree``), and run

    PYTHONPATH=/tmp/wid-at-release python -m tools.kept_checkpoints tests/checkpoints/layout-2 --kinds tumbling,...

Per kind, a directory holds ``pipeline.toml``, the landing files the
stream read (``land/``), those it is to read after the restart
(``later/``), its checkpoint and its SQLite output. Spark's file source
logs the absolute paths of the files it read, so they are written with the
placeholder `ROOT` for the kind's directory (`relocate` puts a real one
back), and the checksums of the rewritten logs are dropped (Hadoop checks
a file against its checksum only when there is one).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = "WID_KEPT_ROOT"
EXTENTS = {
    "tumbling": 'kind = "tumbling"\nduration_ms = 10000',
    "hopping": 'kind = "hopping"\nduration_ms = 30000\nhop_ms = 10000',
    "session": 'kind = "session"\ngap_ms = 2000',
    "count": 'kind = "count"\nsize_rows = 4\nhop_rows = 2',
    "rolling": 'kind = "rolling"\nduration_ms = 5000',
    "landmark": 'kind = "landmark"\nhop_ms = 10000\nlandmark_ms = 1700000000000\nmax_duration_ms = 60000',
}
# The kept streams' pipeline, written out here rather than taken from tests.fixtures: it is what every kept
# checkpoint was made with, so it must not follow a change of the suite's own pipeline.
PIPELINE = """name = "kept"

[source]
format = "json"
path = "land"
stream = true
schema = "k STRING, ts LONG, v DOUBLE"
options = {{ maxFilesPerTrigger = "1" }}

[transform.window]
{extent}
event_time_column = "ts"
event_time_unit = "ms"
group_by = ["k"]
lateness_ms = 3000
late_data = "dlq"
max_groups_per_window = 1000

[[transform.window.aggregations]]
agg = "count"
as = "n"

[[transform.window.aggregations]]
agg = "sum"
column = "v"
as = "total"

[spark]
master = "local[2]"
conf = {{ "spark.sql.shuffle.partitions" = "2" }}

[stream]
checkpoint = "ck"

[target]
kind = "sqlite"
path = "out.sqlite"
table = "windows"

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"
"""
T0 = 1_700_000_000_000
FILES, BEFORE = 4, 2  # landing files, and how many the kept stream read before it stopped


def rows(file: int) -> list[dict[str, object]]:
    """File `file`'s rows: 12 in time order over two keys, 1.3 s apart,
    and, from the second file on, one 20 s behind (late)."""
    base = T0 + file * 12 * 1_300
    out: list[dict[str, object]] = [{"k": "ab"[i % 2], "ts": base + i * 1_300, "v": float((file * 12 + i) % 7)}
                                    for i in range(12)]
    if file:
        out.append({"k": "a", "ts": base - 20_000, "v": 10.0})
    return out


def land(directory: Path, files: range) -> None:
    """The landing files `files`, modified in order (Spark's file source reads them so)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i in files:
        (directory / f"part-{i:04d}.json").write_text("".join(json.dumps(r) + "\n" for r in rows(i)))
    stamp(directory)


def stamp(directory: Path) -> None:
    """Give each landing file `part-NNNN.json` in `directory` the modification
    time the kept stream saw: file NNNN at 1,000,000 + NNNN s. Git keeps no
    modification times, and a checkout's are all "now"; Spark's file source
    forgets the files it logged once they are older than ``maxFileAge``
    behind the newest file, and would then take the old files, stamped
    "now", for new ones."""
    for path in directory.glob("part-*.json"):
        at = 1_000_000 + int(path.stem.removeprefix("part-"))
        os.utime(path, (at, at))


def logs(root: Path) -> list[Path]:
    """Spark's file-source logs under checkpoint `root` (they name files by absolute path)."""
    return [p for p in (root / "ck" / "sources").rglob("*") if p.is_file() and not p.name.startswith(".")]


def relocate(kind_dir: Path, old: str, new: str) -> None:
    """Rewrite `old` to `new` in the file-source logs of `kind_dir`'s
    checkpoint and drop their checksums."""
    for log in logs(kind_dir):
        log.write_text(log.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        log.with_name(f".{log.name}.crc").unlink(missing_ok=True)


def make(target: Path, kind: str) -> None:
    """Run the kept stream of `kind` with whatever ``wid`` Python imports,
    and keep it in `target`/`kind`."""
    work = target / kind
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "pipeline.toml").write_text(PIPELINE.format(extent=EXTENTS[kind]))
    land(work / "land", range(BEFORE))
    land(work / "later", range(BEFORE, FILES))
    subprocess.run([sys.executable, "-m", "wid", "run", "--quiet", "pipeline.toml"], cwd=work, check=True)
    relocate(work, f"file://{work.resolve()}", f"file://{ROOT}")
    for junk in (work / "spark-warehouse", work / "metastore_db"):
        shutil.rmtree(junk, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path, help="where the set goes, e.g. tests/checkpoints/layout-2")
    parser.add_argument("--kinds", default=",".join(EXTENTS), help="comma-separated kinds (default: all)")
    args = parser.parse_args()
    for kind in args.kinds.split(","):
        make(args.target.resolve(), kind)


if __name__ == "__main__":
    main()
