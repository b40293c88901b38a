"""Crash recovery: `wid run` killed with SIGKILL at random moments five
times and restarted; the sink must end up exactly as after an uninterrupted
run (no duplicates, nothing missing). `python -m benchmarks.crash_recovery`
does the same 50 times and prints the tally."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.crash_recovery import HOPPING, one_run, tables


def test_sigkill_five_times_then_drain_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    result = one_run(tmp_path, seed=7, kills=5)
    assert result["kills"] >= 1, "the stream finished before it could be killed; make it longer"
    assert result["duplicates"] == 0 and result["missing"] == 0 and result["extra"] == 0, result


@pytest.mark.parametrize("policy", ["dlq", "reopen"])
def test_sigkill_on_the_wid_operator_with_late_rows(tmp_path: Path, policy: str) -> None:
    # late rows (3 % of the stream, a minute behind) go to the dead letter, or reopen their windows;
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

