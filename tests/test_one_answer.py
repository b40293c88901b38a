"""One Window, one answer: every execution path wid has, run end to end as a
pipeline (JSON files read by wid, SQLite target and dead letter), against
the oracles on random Windows, random data and random micro-batch splits.

- **Stream**: one landing file per micro-batch, with disorder beyond the
  lateness, bad rows and malformed lines. Per micro-batch, the run's counts
  (rows in, rejected, late dropped, late to the dead letter, aggregated)
  equal the streaming oracle's (`wid.semantics.stream_oracle.run_stream`)
  and the accounting identity holds; at the end the target table equals
  the oracle's emissions applied in order as upserts by natural key (and
  deletes for retractions), and the dead letter holds exactly the oracle's
  rejected and late rows plus the malformed lines, with their reasons.
- **Batch**: the same files read as one batch: the target table equals the
  batch oracle's windows (`wid.semantics.evaluate`) and the dead letter its
  rejected rows plus the malformed lines.

Nothing here names an execution path: whichever one wid chooses for a
Window must give these results.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import wid
from tests.spark.compare import same_value
from wid.semantics import evaluate, reasons
from wid.semantics.stream_oracle import BatchResult, MicroBatch, run_stream
from wid.spark.plan import natural_key
from wid.spec import Aggregation, Window
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec, StreamSpec

SCHEMA = "k STRING, ts BIGINT, v DOUBLE"
COLUMNS = ("k", "ts", "v")
MALFORMED_LINE = '{"k": "a", "ts": '  # a line cut short: no JSON parser reads it
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="total"), Aggregation("max", "v", as_="hi"),
        Aggregation("last", "v", as_="last_v"))

Row = dict[str, Any]


@st.composite
def windows(draw: st.DrawFn, kind: str) -> Window:
    """A Window of `kind` that runs on a stream, with every late-data policy,
    both late modes and both emit modes the kind takes."""
    shape: dict[str, Any] = {
        "tumbling": lambda: {"duration_ms": draw(st.sampled_from([10, 20])), "origin_ms": draw(st.sampled_from([0, 3]))},
        "hopping": lambda: {"duration_ms": 20, "hop_ms": draw(st.sampled_from([5, 10])),
                            "late_mode": draw(st.sampled_from(["generous", "consistent"]))},
        "session": lambda: {"gap_ms": draw(st.sampled_from([3, 8]))},
        "count": lambda: {"size_rows": draw(st.sampled_from([2, 3])), "hop_rows": draw(st.sampled_from([1, 2]))},
        "rolling": lambda: {"duration_ms": draw(st.sampled_from([6, 15])), "every_rows": draw(st.sampled_from([None, 2]))},
        "landmark": lambda: {"hop_ms": 10, "landmark_ms": -20, "max_duration_ms": draw(st.sampled_from([None, 30])),
                             "late_mode": draw(st.sampled_from(["generous", "consistent"]))},
    }[kind]()
    ranked = kind == "count" or shape.get("every_rows")  # a late row would shift ranks: reopen is refused
    policies = ["drop", "dlq"] if ranked else ["drop", "dlq", "reopen"]
    policy = draw(st.sampled_from(policies))
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=AGGS,
                  lateness_ms=draw(st.sampled_from([0, 4, 12])), late_data=policy,
                  allowed_lateness_ms=draw(st.sampled_from([5, 30])) if policy == "reopen" else None,
                  emit=draw(st.sampled_from(["on_close"] if shape.get("every_rows") else ["on_close", "on_update"])),
                  max_groups_per_window=100,
                  **{k: v for k, v in shape.items() if v is not None})


@st.composite
def streams(draw: st.DrawFn) -> list[list[Row | str]]:
    """Rows in roughly increasing event time, shuffled within a disorder
    that may exceed the lateness, a few held back far behind, some with a
    NULL key or event time, and malformed lines (strings); cut into 1 to 4
    micro-batches, none empty."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(1, 30))
    disorder = draw(st.sampled_from([0, 8, 40]))
    rows: list[Row | str] = []
    for i in range(n):
        row: Row = {"k": rng.choice("ab"), "ts": i * 3 + rng.randrange(3), "v": rng.choice([None, float(rng.randrange(-5, 9))])}
        if rng.random() < 0.08:
            row[rng.choice(["k", "ts"])] = None
        rows.append(row)
    order = sorted(range(n), key=lambda i: i * 3 + rng.randrange(disorder + 1)
                   + (200 if rng.random() < 0.1 else 0))
    ordered: list[Row | str] = [rows[i] for i in order]
    for _ in range(draw(st.integers(0, 2))):
        ordered.insert(rng.randrange(len(ordered) + 1), MALFORMED_LINE)
    cuts = sorted(rng.sample(range(1, len(ordered)), min(len(ordered) - 1, draw(st.integers(0, 3)))))
    return [ordered[a:b] for a, b in zip([0, *cuts], [*cuts, len(ordered)], strict=True)]


def land(root: Path, batches: Sequence[Sequence[Row | str]]) -> Path:
    """One JSON-lines file per micro-batch, in order of modification time."""
    land_dir = root / "land"
    land_dir.mkdir(parents=True)
    for i, batch in enumerate(batches):
        path = land_dir / f"part-{i:04d}.json"
        path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in batch))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return land_dir


def pipeline(root: Path, land_dir: Path, window: Window, stream: bool) -> PipelineSpec:
    db = str(root / ("stream.sqlite" if stream else "batch.sqlite"))
    options = {"maxFilesPerTrigger": "1"} if stream else {}
    return PipelineSpec(name="paths", source=SourceSpec("json", path=str(land_dir), schema=SCHEMA, stream=stream,
                                                        options=options),
                        window=window, target=SinkSpec("sqlite", path=db, table="windows"),
                        dead_letter=SinkSpec("sqlite", path=db, table="dead_letter"),
                        stream=StreamSpec(checkpoint=str(root / "checkpoint")), base_dir=str(root))


def read_table(path: str, table: str) -> list[Row]:
    with closing(sqlite3.connect(path)) as con:
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(f'SELECT * FROM "{table}"')]
        except sqlite3.OperationalError:  # never created: nothing was written
            return []


def iso(us: int) -> str:
    """Epoch microseconds as the SQLite sink writes a timestamp."""
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_sink_row(window: Window, row: Row) -> Row:
    """An oracle output row as the SQLite sink holds it (bounds as ISO text)."""
    bounds = set(window.output_prefix[:2]) if window.kind != "rolling" else set()
    return {c: (iso(v) if c in bounds and v is not None else v) for c, v in row.items()}


def folded(window: Window, results: Iterable[BatchResult], columns: list[str]) -> list[Row]:
    """The oracle's emissions applied in order, as a keyed sink applies them:
    an upsert by natural key, a delete for a retraction."""
    key = natural_key(window, columns)
    table: dict[tuple[Any, ...], Row] = {}
    for result in results:
        for e in result.emitted:
            row = as_sink_row(window, e.row)
            k = tuple(row[c] for c in key)
            if e.retract:
                table.pop(k, None)
            else:
                table[k] = {**row, "is_final": e.final} if window.emit == "on_update" else row
    return list(table.values())


def assert_same_rows(window: Window, got: list[Row], want: list[Row]) -> None:
    aliases = {a.as_ for a in window.aggregations}
    assert len(got) == len(want), f"{len(got)} rows written, the oracle gives {len(want)}:\n{got}\n{want}"
    if not want:
        return
    exact = [c for c in want[0] if c not in aliases]

    def key(r: Row) -> str:
        return json.dumps([bool(r[c]) if c == "is_final" else r[c] for c in exact])
    for g, w in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        assert key(g) == key(w), f"\n wid    {g}\n oracle {w}"
        for a in window.aggregations:
            assert same_value(a.agg, a.mode, g[a.as_], w[a.as_]), f"{a.as_}:\n wid    {g}\n oracle {w}"


def dead_letters(rows: list[Row]) -> Counter[tuple[str, str]]:
    """(reason, row) of each dead-letter row, counted by its occurrences."""
    out: Counter[tuple[str, str]] = Counter()
    for r in rows:
        try:
            parsed = json.loads(r["row_json"])
        except json.JSONDecodeError:
            parsed = r["row_json"]
        out[r["reason"], json.dumps(parsed, sort_keys=True)] += r["occurrences"]
    return out


def expected_dead(rejected: Iterable[tuple[str, Row | str]]) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for reason, row in rejected:
        full = row if isinstance(row, str) else {c: row.get(c) for c in COLUMNS}
        out[reason, json.dumps(full, sort_keys=True)] += 1
    return out


def rows_of(batch: Sequence[Row | str]) -> list[Row]:
    return [r for r in batch if not isinstance(r, str)]


def malformed(batch: Sequence[Row | str]) -> list[str]:
    return [r for r in batch if isinstance(r, str)]


def examples(n: int) -> settings:
    """`n` examples, each a Spark run: no deadline, and no shrinking (it would take minutes; Hypothesis
    prints the failing example as generated)."""
    return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])


def drawn_run(spark: Any, tmp_path_factory: Any, kind: str, data: st.DataObject,
              stream: bool) -> tuple[Window, list[list[Row | str]], Path, Any]:
    """Draw a Window of `kind` and a stream, land it, and run the pipeline
    (streaming or batch) over it; returns the window, the micro-batches, the
    run's folder and its report."""
    window = data.draw(windows(kind))
    batches = data.draw(streams())
    root = tmp_path_factory.mktemp("stream" if stream else "batch")
    return window, batches, root, wid.run_pipeline(pipeline(root, land(root, batches), window, stream), spark)


KINDS = ["tumbling", "hopping", "session", "count", "rolling", "landmark"]


@pytest.mark.parametrize("kind", KINDS)
@examples(3)
@given(data=st.data())
def test_a_stream_gives_the_streaming_oracle_s_answer(spark: Any, tmp_path_factory: Any, kind: str,
                                                      data: st.DataObject) -> None:
    window, batches, root, report = drawn_run(spark, tmp_path_factory, kind, data, stream=True)
    oracle = run_stream([MicroBatch([("source", r) for r in rows_of(b)]) for b in batches], window)

    assert len(report.batches) == len(batches)
    for i, (got, want, batch) in enumerate(zip(report.batches, oracle, batches, strict=True)):
        bad = len(malformed(batch))
        assert (got.rows_in, got.rows_rejected, got.rows_late_dropped, got.rows_late_dlq, got.rows_aggregated) == (
            want.rows_in + bad, want.rows_rejected + bad, want.rows_late_dropped, want.rows_late_dlq,
            want.rows_aggregated), f"micro-batch {i}"
        assert got.rows_in == got.rows_rejected + got.rows_late_dropped + got.rows_late_dlq + got.rows_aggregated
    assert report.identity_holds

    written = read_table(str(root / "stream.sqlite"), "windows")
    columns = list(written[0]) if written else []
    assert_same_rows(window, written, folded(window, oracle, columns))
    want_dead = expected_dead([*[(d.reason, d.row) for o in oracle for d in o.rejected],
                               *[(d.reason, d.row) for o in oracle for d in o.late],
                               *[(reasons.MALFORMED, line) for b in batches for line in malformed(b)]])
    assert dead_letters(read_table(str(root / "stream.sqlite"), "dead_letter")) == want_dead


@pytest.mark.parametrize("kind", KINDS)
@examples(2)
@given(data=st.data())
def test_the_same_files_in_batch_give_the_batch_oracle_s_answer(spark: Any, tmp_path_factory: Any, kind: str,
                                                                 data: st.DataObject) -> None:
    window, batches, root, report = drawn_run(spark, tmp_path_factory, kind, data, stream=False)
    rows = [r for b in batches for r in rows_of(b)]
    oracle = evaluate(rows, window)
    lines = [line for b in batches for line in malformed(b)]
    assert (report.rows_in, report.rows_rejected) == (len(rows) + len(lines), oracle.rows_rejected + len(lines))
    assert report.identity_holds
    written = read_table(str(root / "batch.sqlite"), "windows")
    assert_same_rows(window, written, [as_sink_row(window, r) for r in oracle.rows])
    want_dead = expected_dead([*[(d.reason, d.row) for d in oracle.dead_letter],
                               *[(reasons.MALFORMED, line) for line in lines]])
    assert dead_letters(read_table(str(root / "batch.sqlite"), "dead_letter")) == want_dead
