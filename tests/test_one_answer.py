"""One Window, one answer: every execution path wid has, run end to end as a
pipeline (JSON files read by wid, SQLite target and dead letter), against
the oracles on random Windows, random data and random micro-batch splits.

- **Stream**: one landing file per micro-batch, with disorder beyond the
  lateness, bad rows (event times NULL, out of range or in the future) and
  malformed lines. Per micro-batch, the run's counts
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

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import wid
from tests.fixtures import examples_here
from tests.sink_check import (
    Row,
    as_sink_row,
    assert_same_rows,
    dead_letters,
    expected_dead,
    land,
    malformed,
    read_table,
    rows_of,
    stream_outcome,
)
from tests.strategies import kind_params
from wid.semantics import evaluate, reasons
from wid.spec import Aggregation, Window
from wid.spec.kinds import KINDS
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec, StreamSpec

pytestmark = pytest.mark.leg  # runs on every Spark the suite covers (tests/legs)

SCHEMA = "k STRING, ts BIGINT, v DOUBLE"
COLUMNS = ("k", "ts", "v")
MALFORMED_LINE = '{"k": "a", "ts": '  # a line cut short: no JSON parser reads it
OUT_OF_RANGE_MS = 1_700_000_000_123_456_789  # a nanosecond time in a millisecond column: ts * 1000 overflows
FUTURE_MS = 253_402_300_799_000  # 9999-12-31T23:59:59Z: ahead of any processing time by far more than a day
AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="total"), Aggregation("max", "v", as_="hi"),
        Aggregation("last", "v", as_="last_v"))



@st.composite
def windows(draw: st.DrawFn, kind: str) -> Window:
    """A Window of `kind` that runs on a stream, with every late-data policy,
    both late modes and both emit modes the kind takes (a kind not named
    below: its transcripts' parameters, `tests.strategies.kind_params`)."""
    shapes: dict[str, Any] = {
        "tumbling": lambda: {"duration_ms": draw(st.sampled_from([10, 20])), "origin_ms": draw(st.sampled_from([0, 3]))},
        "hopping": lambda: {"duration_ms": 20, "hop_ms": draw(st.sampled_from([5, 10])),
                            "late_mode": draw(st.sampled_from(["generous", "consistent"]))},
        "session": lambda: {"gap_ms": draw(st.sampled_from([3, 8]))},
        "count": lambda: {"size_rows": draw(st.sampled_from([2, 3])), "hop_rows": draw(st.sampled_from([1, 2]))},
        "rolling": lambda: {"duration_ms": draw(st.sampled_from([6, 15])), "every_rows": draw(st.sampled_from([None, 2]))},
        "landmark": lambda: {"hop_ms": 10, "landmark_ms": -20, "max_duration_ms": draw(st.sampled_from([None, 30])),
                             "late_mode": draw(st.sampled_from(["generous", "consistent"]))},
    }
    shape: dict[str, Any] = shapes[kind]() if kind in shapes else draw(kind_params(kind))
    made = KINDS[kind](**{k: v for k, v in shape.items() if k in KINDS[kind].fields})
    # a late row would shift ranks, and a kind whose rows are never late has nothing to reopen: reopen is refused
    late = made.late_rows(Window(kind=kind, event_time_column="ts", aggregations=AGGS, **shape))
    policies = ["drop", "dlq"] if made.ranks_rows() or not late else ["drop", "dlq", "reopen"]
    policy = draw(st.sampled_from(policies))
    emits = [e for e in ("on_close", "on_update") if e in made.stream_emits]  # the emit modes it has on a stream
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=AGGS,
                  lateness_ms=draw(st.sampled_from([0, 4, 12])), late_data=policy,
                  allowed_lateness_ms=draw(st.sampled_from([5, 30])) if policy == "reopen" else None,
                  emit=draw(st.sampled_from(["on_close"] if shape.get("every_rows") else emits)),
                  max_groups_per_window=100, max_future_ms=86_400_000,  # guarded in batch too: one answer
                  **{k: v for k, v in shape.items() if v is not None})


@st.composite
def streams(draw: st.DrawFn) -> list[list[Row | str]]:
    """Rows in roughly increasing event time, shuffled within a disorder
    that may exceed the lateness, a few held back far behind, some with a
    NULL key or event time, or one out of range or in the future, and
    malformed lines (strings); cut into 1 to 4 micro-batches, none empty."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(1, 30))
    disorder = draw(st.sampled_from([0, 8, 40]))
    rows: list[Row | str] = []
    for i in range(n):
        row: Row = {"k": rng.choice("ab"), "ts": i * 3 + rng.randrange(3), "v": rng.choice([None, float(rng.randrange(-5, 9))])}
        if rng.random() < 0.08:
            row[rng.choice(["k", "ts"])] = None
        elif rng.random() < 0.06:  # a time no row may bring in: past Spark's range, or in year 9999
            row["ts"] = rng.choice([OUT_OF_RANGE_MS, FUTURE_MS])
        rows.append(row)
    order = sorted(range(n), key=lambda i: i * 3 + rng.randrange(disorder + 1)
                   + (200 if rng.random() < 0.1 else 0))
    ordered: list[Row | str] = [rows[i] for i in order]
    for _ in range(draw(st.integers(0, 2))):
        ordered.insert(rng.randrange(len(ordered) + 1), MALFORMED_LINE)
    cuts = sorted(rng.sample(range(1, len(ordered)), min(len(ordered) - 1, draw(st.integers(0, 3)))))
    return [ordered[a:b] for a, b in zip([0, *cuts], [*cuts, len(ordered)], strict=True)]


def pipeline(root: Path, land_dir: Path, window: Window, stream: bool) -> PipelineSpec:
    db = str(root / ("stream.sqlite" if stream else "batch.sqlite"))
    options = {"maxFilesPerTrigger": "1"} if stream else {}
    return PipelineSpec(name="paths", source=SourceSpec("json", path=str(land_dir), schema=SCHEMA, stream=stream,
                                                        options=options),
                        window=window, target=SinkSpec("sqlite", path=db, table="windows"),
                        dead_letter=SinkSpec("sqlite", path=db, table="dead_letter"),
                        stream=StreamSpec(checkpoint=str(root / "checkpoint")), base_dir=str(root))


def examples(n: int) -> settings:
    """`n` examples, each a Spark run: no deadline, and no shrinking (it would take minutes; Hypothesis
    prints the failing example as generated)."""
    return settings(max_examples=examples_here(n), deadline=None, suppress_health_check=list(HealthCheck),
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


@pytest.mark.parametrize("kind", list(KINDS))
@examples(3)
@given(data=st.data())
def test_a_stream_gives_the_streaming_oracle_s_answer(spark: Any, tmp_path_factory: Any, kind: str,
                                                      data: st.DataObject) -> None:
    window, batches, root, report = drawn_run(spark, tmp_path_factory, kind, data, stream=True)
    written = read_table(str(root / "stream.sqlite"), "windows")
    oracle, want_rows, want_dead = stream_outcome(window, batches, COLUMNS, list(written[0]) if written else [])

    assert len(report.batches) == len(batches)
    for i, (got, want, batch) in enumerate(zip(report.batches, oracle, batches, strict=True)):
        bad = len(malformed(batch))
        assert (got.rows_in, got.rows_rejected, got.rows_late_dropped, got.rows_late_dlq, got.rows_aggregated) == (
            want.rows_in + bad, want.rows_rejected + bad, want.rows_late_dropped, want.rows_late_dlq,
            want.rows_aggregated), f"micro-batch {i}"
        assert got.rows_in == got.rows_rejected + got.rows_late_dropped + got.rows_late_dlq + got.rows_aggregated
    assert report.identity_holds

    assert_same_rows(window, written, want_rows)
    assert dead_letters(read_table(str(root / "stream.sqlite"), "dead_letter")) == want_dead


@pytest.mark.parametrize("kind", list(KINDS))
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
                               *[(reasons.MALFORMED, line) for line in lines]], COLUMNS)
    assert dead_letters(read_table(str(root / "batch.sqlite"), "dead_letter")) == want_dead
