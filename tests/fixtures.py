"""Shared test data: the streaming pipeline most pipeline tests run (a JSON
landing directory, a window over ``ts`` in ms per ``k`` with count and sum,
SQLite out), its rows and landing files, and reading a SQLite table back."""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

COUNT_AND_SUM = """[[transform.window.aggregations]]
agg = "count"
as = "n"

[[transform.window.aggregations]]
agg = "sum"
column = "v"
as = "total"
"""  # count and sum of v per window, as TOML aggregation tables
PIPELINE = """
name = "{name}"

[source]
format = "json"
path = "land"
stream = true
schema = "k STRING, ts LONG, v DOUBLE"
options = {{ maxFilesPerTrigger = "1" }}

[transform.window]
{extent}
late_mode = "consistent"
event_time_column = "ts"
event_time_unit = "ms"
group_by = ["k"]
lateness_ms = 5000
max_groups_per_window = {cap}

""" + COUNT_AND_SUM + """
[spark]
master = "local[2]"
conf = {{ "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }}

[target]
kind = "sqlite"
path = "out.sqlite"
table = "windows"

[dead_letter]
kind = "sqlite"
path = "out.sqlite"
table = "dead_letter"
"""
LEG_ENV = "WID_TEST_LEG"  # set by tests/legs in the suite it runs again on another Spark or deployment
LEG_EXAMPLES = 3


def examples_here(n: int) -> int:
    """`n` Hypothesis examples, or at most `LEG_EXAMPLES` when this suite
    runs as a leg (`LEG_ENV` set, tests/legs). A leg asks whether the same
    answers come where users run Spark (Connect, a cluster, the oldest
    release); the search for counterexamples, each a Spark job, is the
    main run's, which draws all `n`."""
    return min(n, LEG_EXAMPLES) if os.environ.get(LEG_ENV) else n


HOPPING = 'kind = "hopping"\nduration_ms = 30000\nhop_ms = 10000'
POLICIES = {"drop": "", "dlq": '\nlate_data = "dlq"', "reopen": '\nlate_data = "reopen"\nallowed_lateness_ms = 30000'}
COLUMNS = ("k", "ts", "v")
T0 = 1_700_000_000_000


def pipeline_toml(extent: str = HOPPING, name: str = "crash", cap: int = 1000) -> str:
    """The pipeline `name`: landing directory `land`, the window `extent`
    (kind, sizes, late-data policy) over ``ts`` in ms per ``k`` with count
    and sum, at most `cap` groups a window, SQLite `out.sqlite` for windows
    and dead letters."""
    return PIPELINE.format(extent=extent, name=name, cap=cap)


EXTENTS = {"tumbling": 'kind = "tumbling"\nduration_ms = 10000', "hopping": HOPPING}


def stamped(files: list[list[dict[str, Any]]], source: str = "source") -> list[Any]:
    """Landed files as the streaming oracle's micro-batches, one a file,
    stamped as Spark stamps a micro-batch: with the processing time (the
    clock now, a millisecond apart), which the `max_future_ms` guard
    measures from."""
    from wid.semantics.stream_oracle import MicroBatch
    from wid.semantics.timeunits import now_us

    now_ms = now_us() // 1000
    return [MicroBatch([(source, r) for r in rows], now_ms + i) for i, rows in enumerate(files)]


FAR_US = 4_000_000_000_000_000  # an event time far past every window (year 2096)
FLUSH = "~flush"


def open_after(batches: list[Any], window: Any, clocks: list[tuple[str, dict[str, Any]]]) -> Counter:
    """(window_start, window_end) -> groups, of the windows the oracle holds
    open after `batches`: what one more micro-batch emits once a row of
    group `FLUSH` far ahead on every clock (`clocks`: (source, extra
    columns naming the clock)) closes them."""
    from wid.semantics.stream_oracle import MicroBatch, run_stream

    key, now_ms = window.group_by[0], FAR_US // 1000  # as late in processing time, so not refused as future
    at = datetime.fromtimestamp(now_ms / 1000, UTC) if window.event_time_unit == "timestamp" else now_ms
    far = {key: FLUSH, window.event_time_column: at, "v": 0.0}
    flush = [MicroBatch([(source, {**far, **extra}) for source, extra in clocks], now_ms), MicroBatch([], now_ms + 1)]
    after = run_stream([*batches, *flush], window)[len(batches):]  # a micro-batch emits by the watermark before it
    return Counter((e.row["window_start"], e.row["window_end"]) for b in after for e in b.emitted
                   if e.final and not e.retract and e.row[key] != FLUSH)


def good_rows(n: int, start_ms: int = 1_700_000_000_000) -> list[dict[str, Any]]:
    return [{"k": "ab"[i % 2], "ts": start_ms + i * 1_300, "v": float(i % 7)} for i in range(n)]


def land(directory: Path, lines_per_file: list[list[str]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, lines in enumerate(lines_per_file):
        path = directory / f"part-{i:04d}.json"
        path.write_text("".join(line + "\n" for line in lines))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def write_pipeline(root: Path, kind: str = "tumbling") -> Path:
    toml = root / "pipeline.toml"
    toml.write_text(pipeline_toml(EXTENTS[kind], name="sensors"))
    return toml


def table(db: Path, name: str) -> list[dict[str, Any]]:
    with closing(sqlite3.connect(db)) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f'SELECT * FROM "{name}"')]
