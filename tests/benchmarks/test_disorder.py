"""The disorder experiment's parts (`benchmarks.disorder`): the generators
keep their promises, the punctuations never lie, the exact results are
right, and wid's operator is exact exactly when its slack covers the
disorder."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks.disorder.exact import exact_windows
from benchmarks.disorder.measure import arrivals, judge
from benchmarks.disorder.operator_run import Handling, run_operator
from benchmarks.disorder.streams import (
    Stream,
    batch_of,
    batches,
    block_sorted,
    bounded,
    in_order,
    punctuations,
)

ROWS, KEYS, RATE, BATCH = 4_000, 5, 250, 50
DURATION_MS, HOP_MS, D_MS, B_ROWS = 2_000, 500, 300, 400


def rows_of(s: Stream) -> pd.DataFrame:
    return pd.DataFrame({"k": s.k, "ts_ms": s.ts_ms, "v": s.v}).sort_values(["ts_ms", "k", "v"], ignore_index=True)


@pytest.fixture(scope="module")
def stream() -> Stream:
    return in_order(ROWS, KEYS, RATE, seed=7)


@pytest.mark.parametrize("disorder_ms", [0, 1, 50, 300, 2_000])
@pytest.mark.parametrize("seed", [1, 2])
def test_bounded_keeps_every_row_within_its_displacement_bound(stream: Stream, disorder_ms: int, seed: int) -> None:
    arrival = bounded(stream, disorder_ms, seed)
    ts = arrival.ts_ms
    before = np.maximum.accumulate(np.concatenate([[ts[0]], ts[:-1]]))  # largest time arrived earlier
    assert np.all(ts >= before - disorder_ms)
    pd.testing.assert_frame_equal(rows_of(arrival), rows_of(stream))
    assert (np.any(np.diff(ts) < 0)) == (disorder_ms > 1)  # disordered once delays can differ by 2 ms


@pytest.mark.parametrize("block_rows", [1, 7, B_ROWS, ROWS + 1])
def test_block_sorted_is_a_permutation_that_keeps_blocks(stream: Stream, block_rows: int) -> None:
    arrival = block_sorted(stream, block_rows, seed=3)
    pd.testing.assert_frame_equal(rows_of(arrival), rows_of(stream))
    for lo in range(0, ROWS, block_rows):
        part = np.arange(lo, min(lo + block_rows, ROWS))
        mine, theirs = arrival.take(part), stream.take(part)
        pd.testing.assert_frame_equal(rows_of(mine), rows_of(theirs))
    assert np.any(np.diff(arrival.ts_ms) < 0) == (block_rows > 1)


@pytest.mark.parametrize("disorder", ["none", "bounded", "block"])
def test_rows_arrive_in_time_order_and_never_before_they_happen(stream: Stream, disorder: str) -> None:
    arrival = {"none": stream, "bounded": bounded(stream, D_MS, 1), "block": block_sorted(stream, B_ROWS, 1)}[disorder]
    wait = arrival.arrive_ms - arrival.ts_ms
    assert np.all(np.diff(arrival.arrive_ms) >= 0) and np.all(wait >= 0)
    if disorder == "bounded":
        assert wait.max() <= D_MS
    if disorder == "block":  # a block arrives when its last row has happened
        for lo in range(0, ROWS, B_ROWS):
            assert np.all(arrival.arrive_ms[lo:lo + B_ROWS] == arrival.ts_ms[lo:lo + B_ROWS].max())
    assert disorder != "none" or np.array_equal(arrival.arrive_ms, arrival.ts_ms)


@pytest.mark.parametrize("disorder", ["bounded", "block"])
@pytest.mark.parametrize(("every_ms", "lag_ms"), [(100, 0), (500, 0), (250, 120)])
def test_a_punctuation_p_is_followed_by_no_row_before_p(stream: Stream, disorder: str, every_ms: int,
                                                        lag_ms: int) -> None:
    arrival = bounded(stream, D_MS, 4) if disorder == "bounded" else block_sorted(stream, B_ROWS, 4)
    punct = punctuations(arrival, every_ms, lag_ms)
    ts = arrival.ts_ms
    assert np.all(np.diff(punct.p_ms) == every_ms) and punct.p_ms[-1] >= ts.max()
    carried = batch_of(punct.after, BATCH, batches(ROWS, BATCH))
    for p, after, b in zip(punct.p_ms, punct.after, carried, strict=True):
        assert np.all(ts[after:] >= p + lag_ms)           # true when sent
        assert after == 0 or ts[after - 1:].min() < p + lag_ms  # and sent as early as it is true
        assert np.all(ts[(b + 1) * BATCH:] >= p)          # no later micro-batch holds a row before p


def test_exact_windows_match_a_row_by_row_count(stream: Stream) -> None:
    arrival = bounded(stream, D_MS, 5)
    got = exact_windows(arrival, DURATION_MS, HOP_MS).set_index(["k", "start_ms"])
    expected: dict[tuple[int, int], list[float]] = {}
    for k, ts, v in zip(arrival.k[:300], arrival.ts_ms[:300], arrival.v[:300], strict=True):
        start = ts - ts % HOP_MS
        while start > ts - DURATION_MS:  # [start, start + duration) holds ts
            expected.setdefault((int(k), int(start)), []).append(float(v))
            start -= HOP_MS
    small = exact_windows(arrival.take(np.arange(300)), DURATION_MS, HOP_MS)
    assert len(small) == len(expected)
    for row in small.itertuples():
        values = expected[(row.k, row.start_ms)]
        assert row.end_ms == row.start_ms + DURATION_MS and row.n == len(values) and row.s == pytest.approx(sum(values))
    assert got["n"].sum() == ROWS * DURATION_MS // HOP_MS  # every row in duration / hop windows


def run(arrival: Stream, h: Handling, shards: int = 2) -> tuple[dict[str, object], pd.DataFrame]:
    """Operator run `h` over `arrival`, judged against the exact windows."""
    exact = exact_windows(arrival, DURATION_MS, HOP_MS)
    punct = punctuations(arrival, h.every_ms) if h.completeness == "punctuation" else None
    result = run_operator(arrival, punct, h, DURATION_MS, HOP_MS, BATCH, shards=shards)
    horizon = int(arrival.ts_ms.max()) - 2 * D_MS
    both = exact.merge(result.emitted, on=["k", "start_ms", "end_ms"], how="left", suffixes=("", "_run"))
    return judge(exact, result, arrivals(arrival, BATCH, HOP_MS), horizon), both[both["end_ms"] <= horizon]


@pytest.mark.parametrize("mode", ["consistent", "generous"])
def test_slack_covering_the_bound_gives_the_exact_windows(stream: Stream, mode: str) -> None:
    latency = []
    for slack_ms in (D_MS, 2 * D_MS):
        figures, both = run(bounded(stream, D_MS, 6), Handling("slack", mode, slack_ms=slack_ms))
        assert figures["late_rows"] == 0 and figures["emitted"] == figures["windows"] > 100
        assert figures["incorrect_pct"] == 0 and figures["count_err_pct"] == 0 and figures["sum_err_pct"] == 0
        assert np.array_equal(both["n_run"], both["n"]) and np.allclose(both["a"], both["s"] / both["n"])
        latency.append(figures["latency_ms"])
    assert latency[0] < latency[1]  # a longer slack waits longer


@pytest.mark.parametrize("disorder", ["bounded", "block"])
@pytest.mark.parametrize("mode", ["consistent", "generous"])
def test_exact_punctuations_give_the_exact_windows(stream: Stream, disorder: str, mode: str) -> None:
    arrival = bounded(stream, D_MS, 8) if disorder == "bounded" else block_sorted(stream, B_ROWS, 8)
    figures, both = run(arrival, Handling("punctuation", mode, every_ms=HOP_MS // 2))
    assert figures["latency_ms"] >= 0 and figures["latency_rows"] > 0  # type: ignore[operator]
    assert figures["late_rows"] == 0 and figures["incorrect_pct"] == 0 and figures["emitted"] == figures["windows"]
    assert np.array_equal(both["n_run"], both["n"]) and np.allclose(both["s_run"], both["s"])


@pytest.mark.parametrize("disorder", ["bounded", "block"])
def test_no_slack_loses_rows_and_generous_keeps_more_than_consistent(stream: Stream, disorder: str) -> None:
    arrival = bounded(stream, D_MS, 9) if disorder == "bounded" else block_sorted(stream, B_ROWS, 9)
    consistent, c = run(arrival, Handling("slack", "consistent", slack_ms=0))
    generous, g = run(arrival, Handling("slack", "generous", slack_ms=0), shards=1)
    assert consistent["late_rows"] > 0 and consistent["incorrect_pct"] > 0 and generous["incorrect_pct"] > 0
    assert 0 < generous["count_err_pct"] < consistent["count_err_pct"]  # type: ignore[operator]
    # per window: consistent counts a subset of generous's rows, generous a subset of all of them
    c_n, g_n = c["n_run"].fillna(0).to_numpy(), g["n_run"].fillna(0).to_numpy()
    assert np.all(c_n <= g_n) and np.all(g_n <= g["n"].to_numpy())
