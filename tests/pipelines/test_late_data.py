"""Streaming pipelines on the WID operator end to end: late rows to the
dead letter (dlq), corrected windows upserted over the first ones (reopen),
exact per-batch accounting, all against the streaming oracle."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import HOPPING, land, pipeline_toml, stamped, table
from wid.pipelines.run import run as run_pipeline
from wid.semantics.reasons import LATE
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.semantics.timeunits import us_to_datetime
from wid.spec.toml_io import loads_pipeline


def stream(files: int = 5, per_file: int = 12) -> list[list[dict[str, Any]]]:
    """Rows 700 ms apart with 2 s of disorder, and in later files a few rows
    30 s older than their neighbours: late beyond the 5 s lateness."""
    t0 = 1_700_000_000_000
    out = []
    for f in range(files):
        rows = [{"k": "abc"[i % 3], "ts": t0 + (f * per_file + i) * 700 - (i * 37) % 2_000, "v": float(i)}
                for i in range(per_file)]
        if f >= 2:
            rows += [{"k": "a", "ts": t0 + f * per_file * 700 - 30_000, "v": 100.0 + f}]
        out.append(rows)
    return out


def sqlite_time(us: int) -> str:
    """How the SQLite sink writes a timestamp."""
    return us_to_datetime(us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def final_rows(batches: list[MicroBatch], window: Any) -> dict[tuple[Any, ...], dict[str, Any]]:
    """What a keyed sink holds after the oracle's emissions: each emission
    upserted by natural key (start, group), each retraction deleted."""
    held: dict[tuple[Any, ...], dict[str, Any]] = {}
    for result in run_stream(batches, window):
        for e in sorted(result.emitted, key=lambda e: not e.retract):  # the writer deletes before it upserts
            key = (e.row["window_start"], e.row["k"])
            if e.retract:
                held.pop(key, None)
            else:
                held[key] = {**e.row, "is_final": e.final}
    return held


@pytest.mark.leg
@pytest.mark.parametrize("policy", ["dlq", "reopen"])
def test_late_rows_follow_the_policy_and_the_sink_holds_the_oracle(spark: Any, tmp_path: Path, policy: str) -> None:
    files = stream()
    land(tmp_path / "land", [[json.dumps(r) for r in rows] for rows in files])
    extra = 'late_data = "dlq"' if policy == "dlq" else 'late_data = "reopen"\nallowed_lateness_ms = 20000'
    text = pipeline_toml(HOPPING + "\n" + extra, name=f"op-{policy}")
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    notes: list[str] = []
    report = run_pipeline(spec, spark, on_notice=notes.append)
    batches = stamped(files)
    oracle = run_stream(batches, spec.window)
    assert any("WID operator" in n for n in notes) and any(n.startswith("state bound: ") for n in notes)

    assert report.identity_holds and len(report.batches) == len(files)
    assert [b.rows_late_dlq for b in report.batches] == [r.rows_late_dlq for r in oracle]
    assert [b.rows_late_dropped for b in report.batches] == [r.rows_late_dropped for r in oracle]
    assert [b.rows_aggregated for b in report.batches] == [r.rows_aggregated for r in oracle]
    got = {(g["window_start"], g["k"]): (g["n"], g["total"]) for g in table(tmp_path / "out.sqlite", "windows")}
    want = final_rows(batches, spec.window)
    assert got == {(sqlite_time(s), k): (r["n"], r["total"]) for (s, k), r in want.items()}
    dead = table(tmp_path / "out.sqlite", "dead_letter")
    late = sorted(json.loads(d["row_json"])["ts"] for d in dead if d["reason"] == LATE)
    assert late == sorted(r.row["ts"] for o in oracle for r in o.late)
    if policy == "dlq":
        assert late, "the stream was built to have late rows"


def bridging_sessions(spark: Any, root: Path, name: str = "sessions",
                      wrap: Callable[[str], str] = lambda text: text) -> tuple[Any, list[MicroBatch]]:
    """Run a session pipeline (``emit = "on_update"``, its TOML through
    `wrap`) over four landed files whose rows bridge earlier sessions
    (moving their start or merging two), so that the stream retracts;
    returns its spec and the files as micro-batches."""
    t0 = 1_700_000_000_000
    files = [[{"k": "a", "ts": t0 + 10_000, "v": 1.0}, {"k": "a", "ts": t0 + 20_000, "v": 2.0},
              {"k": "b", "ts": t0 + 12_000, "v": 3.0}],
             [{"k": "a", "ts": t0 + 16_500, "v": 4.0}, {"k": "b", "ts": t0 + 30_000, "v": 5.0}],
             [{"k": "a", "ts": t0 + 14_000, "v": 6.0}, {"k": "b", "ts": t0 + 60_000, "v": 7.0}],
             [{"k": "a", "ts": t0 + 90_000, "v": 8.0}]]
    land(root / "land", [[json.dumps(r) for r in rows] for rows in files])
    spec = loads_pipeline(wrap(pipeline_toml('kind = "session"\ngap_ms = 4000\nemit = "on_update"', name=name)),
                          base_dir=str(root))
    report = run_pipeline(spec, spark)
    batches = stamped(files)
    oracle = run_stream(batches, spec.window)
    assert any(e.retract for r in oracle for e in r.emitted), "the data must retract"
    # every shard's counts, a retracting shard's too: under Spark Connect a first read of the operator's rows
    # that stops at a retraction loses them (`wid.pipelines.write.stream_writer`)
    assert [(b.rows_in, b.rows_aggregated) for b in report.batches] == [(r.rows_in, r.rows_aggregated) for r in oracle]
    assert report.identity_holds
    return spec, batches


def assert_final_sessions(written: list[dict[str, Any]], batches: list[MicroBatch], window: Any) -> None:
    """The sink's session rows are what the oracle's emissions leave."""
    got = {(g["window_start"], g["k"]): (g["n"], g["total"], bool(g["is_final"])) for g in written}
    want = final_rows(batches, window)
    assert got == {(sqlite_time(s), k): (r["n"], r["total"], r["is_final"]) for (s, k), r in want.items()}


@pytest.mark.leg
def test_session_updates_and_retractions_leave_the_sink_as_the_oracle(spark: Any, tmp_path: Path) -> None:
    spec, batches = bridging_sessions(spark, tmp_path)
    assert_final_sessions(table(tmp_path / "out.sqlite", "windows"), batches, spec.window)


@pytest.mark.leg
@pytest.mark.parametrize("policy", ["drop", "dlq"])
def test_group_cap_on_a_stream_fails_with_the_design_message(spark: Any, tmp_path: Path, policy: str) -> None:
    from tests.fixtures import POLICIES, good_rows
    from wid.errors import StateCapError

    land(tmp_path / "land", [[json.dumps(r) for r in good_rows(30)]])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000' + POLICIES[policy], name="capped-op").replace(
        "max_groups_per_window = 1000", "max_groups_per_window = 1")
    with pytest.raises(StateCapError) as err:
        run_pipeline(loads_pipeline(text, base_dir=str(tmp_path)), spark)
    assert str(err.value) == ("window state cap hit: max_groups_per_window=1 reached on window "
                              "[2023-11-14T22:13:20Z, 2023-11-14T22:13:30Z) for pipeline capped-op")


def test_a_window_at_the_cap_is_written(spark: Any, tmp_path: Path) -> None:
    """`max_groups_per_window` is the most a window may hold: a stream whose
    fullest window holds exactly that many groups (pandas counts them)
    writes every window (the writer runs the cap's own query only above it)."""
    import pandas as pd

    from tests.fixtures import good_rows

    rows = good_rows(30)
    land(tmp_path / "land", [[json.dumps(r) for r in rows]])
    frame = pd.DataFrame(rows).assign(w=lambda d: d["ts"] // 10_000)
    fullest = int(frame.groupby("w")["k"].nunique().max())
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="at-cap", cap=fullest)
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    report = run_pipeline(spec, spark)
    emitted = [e.row for r in run_stream(stamped([rows]), spec.window) for e in r.emitted]
    written = table(tmp_path / "out.sqlite", "windows")
    assert report.identity_holds and emitted
    assert sorted((w["k"], w["n"]) for w in written) == sorted((e["k"], e["n"]) for e in emitted)


def test_exact_distinct_cap_on_the_operator_fails_loudly(spark: Any, tmp_path: Path) -> None:
    from wid.errors import StateCapError

    rows = [{"k": "a", "ts": 1_700_000_000_000 + i, "v": float(i)} for i in range(5)]
    rows.append({"k": "a", "ts": 1_700_000_100_000, "v": 0.0})  # moves the watermark past the first window
    land(tmp_path / "land", [[json.dumps(r) for r in rows]])
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000\nlate_data = "dlq"', name="distinct").replace(
        'agg = "sum"\ncolumn = "v"\nas = "total"',
        'agg = "count_distinct"\ncolumn = "v"\nas = "total"\nmode = "exact"\nmax_distinct_values_per_group = 3')
    spec = loads_pipeline(text.replace("lateness_ms = 5000", "lateness_ms = 0"), base_dir=str(tmp_path))
    with pytest.raises(StateCapError, match=r"distinct-value cap hit: max_distinct_values_per_group=3 reached by "
                                            r"aggregation 'total' in window \[2023-11-14T22:13:20Z, "
                                            r"2023-11-14T22:13:30Z\) for pipeline distinct"):
        run_pipeline(spec, spark)
