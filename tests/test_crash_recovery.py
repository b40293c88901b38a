"""Crash recovery: `wid run` killed with SIGKILL at random moments five
times and restarted; the sink must end up exactly as after an uninterrupted
run (no duplicates, nothing missing). `python -m benchmarks.crash_recovery`
does the same 50 times and prints the tally."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from benchmarks.crash_recovery import HOPPING, one_run, tables
from tests.test_join_stream_pipeline import PIPELINE


def test_sigkill_five_times_then_drain_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    result = one_run(tmp_path, seed=7, kills=5)
    # issue 3 asks for at least five kills in the suite: this test alone makes all five
    assert result["kills"] == 5, f"the stream finished after {result['kills']} kills; make it longer"
    assert result["duplicates"] == 0 and result["missing"] == 0 and result["extra"] == 0, result


@pytest.mark.parametrize("policy", ["dlq", "reopen"])
def test_sigkill_on_the_wid_operator_with_late_rows(tmp_path: Path, policy: str) -> None:
    # late rows (3 % of the stream, two minutes behind) go to the dead letter, or are dropped while others
    # (20 s behind) reopen their windows;
    # the operator's state and decisions replay from the checkpoint, so both tables match the reference
    extra = {"dlq": 'late_data = "dlq"', "reopen": 'late_data = "reopen"\nallowed_lateness_ms = 30000'}[policy]
    result = one_run(tmp_path, seed=11, kills=2, files=8, extent=f"{HOPPING}\n{extra}")
    assert result["kills"] >= 1, "the stream finished before it could be killed; make it longer"
    assert result["duplicates"] == 0 and result["missing"] == 0 and result["extra"] == 0, result


@pytest.mark.parametrize("extent", ['kind = "count"\nsize_rows = 20\nhop_rows = 10',
                                    'kind = "rolling"\nduration_ms = 30000'], ids=["count", "rolling"])
def test_sigkill_on_count_and_rolling_windows(tmp_path: Path, extent: str) -> None:
    # count windows rank rows once the watermark passes them (per-partition counters, panes and the rows
    # not yet ranked are in the checkpoint); rolling rows wait for the watermark, their bins checkpointed:
    # after kills and restarts every window id (or input row) is written once, with its uninterrupted value
    result = one_run(tmp_path, seed=13, kills=2, files=8, extent=extent)
    assert result["kills"] >= 1, "the stream finished before it could be killed; make it longer"
    assert result["duplicates"] == 0 and result["missing"] == 0 and result["extra"] == 0, result
    assert len(tables(tmp_path / "ref-13")["windows"]) > 100  # the reference wrote windows (rows) to compare



# the end-to-end join pipeline (rows name their side), windows of 4 s, into table "windows"
JOIN_PIPELINE = PIPELINE.replace('table = "joined"', 'table = "windows"').replace(
    "window = [-3, 2]", "window = [-2000, 2000]").replace("max_delayed_time = 10", "").replace(
    "garbage_size = 2", "garbage_size = 20")


def make_join_stream(root: Path, files: int, rows_per_file: int, rng: random.Random, _: str) -> None:
    """A window-join pipeline and its stream: trades and quotes 700 ms
    apart with disorder, a few quotes a minute late (to the dead letter),
    a few malformed rows."""
    land = root / "land"
    land.mkdir(parents=True)
    (root / "pipeline.toml").write_text(JOIN_PIPELINE)
    t0 = 1_700_000_000_000
    for f in range(files):
        lines = []
        for i in range(rows_per_file):
            ts = t0 + (f * rows_per_file + i) * 700 + rng.randrange(-1_500, 1)
            if rng.random() < 0.4:
                lines.append(json.dumps({"side": "left", "k": rng.choice("abcd"), "t": ts, "id": f * 1000 + i}))
            else:
                late = 60_000 if rng.random() < 0.03 else 0
                lines.append(json.dumps({"side": "right", "k": rng.choice("abcd"), "t": ts - late,
                                         "v": float(rng.randrange(100)), "w": 1}))
        if rng.random() < 0.3:
            lines.append('{"side": "left", "k": "a", "t": "broken", "id": 1}')
        path = land / f"part-{f:04d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_000_000 + f, 1_000_000 + f))


def test_sigkill_on_a_stream_window_join(tmp_path: Path) -> None:
    # pending trades, held quotes and the per-key times are in the checkpoint; a replayed micro-batch
    # fires the same rows, which the sink upserts by their natural key
    result = one_run(tmp_path, seed=17, kills=2, files=8, make=make_join_stream)
    assert result["kills"] >= 1, "the stream finished before it could be killed; make it longer"
    assert result["duplicates"] == 0 and result["missing"] == 0 and result["extra"] == 0, result
    written = tables(tmp_path / "ref-17")
    assert len(written["windows"]) > 100 and any("late" in str(r) for r in written["dead_letter"])
