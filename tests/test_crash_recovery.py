"""Crash recovery: `wid run` killed with SIGKILL at chosen moments of its
checkpoint (after a commit, inside a micro-batch, inside a sink write) on
drop, dlq and reopen, time windows and the operator's count and rolling
windows; restarted and run to the end, its sinks must hold exactly the
streaming oracle's windows and dead letters for the landed files
(`tests.crash_harness`). Every kill is asserted to have landed where it
was aimed. `python -m benchmarks.crash_recovery --runs 50` does it 50 times
and prints the tally."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from tests.crash_harness import KillAt, crash_run, finish, kill_at, sink_tables
from tests.fixtures import HOPPING, POLICIES
from tests.pipelines.test_join_stream import PIPELINE


def assert_recovered(result: dict[str, object]) -> None:
    assert result["landed"] == result["aimed"], result
    assert all(result["after_commit"]), result  # every kill came after the first committed micro-batch
    assert result["windows_equal"] and result["dead_equal"], result
    assert result["oracle_windows"] > 0, result


@pytest.mark.parametrize("policy", ["drop", "dlq", "reopen"])
def test_time_windows_killed_after_a_commit_and_inside_a_micro_batch(tmp_path: Path, policy: str) -> None:
    # reopen, whose state holds the most (emitted windows kept for their corrections), is killed twice; drop and
    # dlq once, inside a micro-batch (each kill is a restart of Spark: CI's time). The campaign kills every policy
    # at random points, many times: python -m benchmarks.crash_recovery --runs 50
    kills = [KillAt("after-commit", 1), KillAt("in-batch", 4)] if policy == "reopen" else [KillAt("in-batch", 4)]
    result = crash_run(tmp_path, seed=7, kills=kills, files=8, extent=HOPPING + POLICIES[policy])
    assert_recovered(result)
    assert result["oracle_late"] > 0  # late rows were judged: dropped, in the dead letter, or reopening


@pytest.mark.parametrize("extent", ['kind = "count"\nsize_rows = 20\nhop_rows = 10',
                                    'kind = "rolling"\nduration_ms = 30000'], ids=["count", "rolling"])
def test_count_and_rolling_windows_killed_inside_a_micro_batch(tmp_path: Path, extent: str) -> None:
    # count windows rank rows once the watermark passes them, rolling rows wait for it: their pending
    # rows, counters and bins are in the checkpoint
    result = crash_run(tmp_path, seed=13, kills=[KillAt("in-batch", 3)], files=7, extent=extent)
    assert_recovered(result)


def test_killed_inside_a_sink_write(tmp_path: Path) -> None:
    # 20,000 keys: a micro-batch writes thousands of windows, and the kill lands inside that transaction
    # (its rollback journal is left behind); the next start rolls it back and the micro-batch replays
    result = crash_run(tmp_path, seed=5, kills=[KillAt("in-sink-write", 2)], files=5, rows_per_file=20_000,
                       extent='kind = "tumbling"\nduration_ms = 10000', keys=20_000)
    assert_recovered(result)


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


def test_a_stream_window_join_killed_inside_a_micro_batch(tmp_path: Path) -> None:
    # pending trades, held quotes and the per-key times are in the checkpoint; a replayed micro-batch
    # fires the same rows, which the sink upserts by their natural key; compared with an uninterrupted run
    ref, crash = tmp_path / "ref", tmp_path / "crash"
    make_join_stream(ref, 8, 40, random.Random(17), "")
    shutil.copytree(ref, crash)
    finish(ref)
    spot = kill_at(crash, KillAt("in-batch", 3))
    finish(crash)
    assert spot == ("in-batch", True)
    written = sink_tables(ref)
    assert sink_tables(crash) == written
    assert len(written["windows"]) > 100 and any("late" in str(r) for r in written["dead_letter"])
