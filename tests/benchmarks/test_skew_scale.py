"""The skew benchmark's keys (`benchmarks.skew_scale`): Zipf(1.1) draws
follow its weights, the hot key holds its share, and the spread of a
shard measure is its largest over its mean."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.skew_scale import HOT_SHARE, ZIPF_S, drawn_keys, shard_spreads, spread


def test_zipf_draws_follow_their_weights() -> None:
    keys, rows = 1_000, 200_000
    got = np.bincount(drawn_keys(np.random.default_rng(1), "zipf", rows, keys), minlength=keys) / rows
    weights = 1.0 / np.arange(1, keys + 1) ** ZIPF_S
    expected = weights / weights.sum()
    assert np.abs(got[:10] - expected[:10]).max() < 0.005  # the most frequent keys, within sampling error
    assert got[0] / got[1] == pytest.approx(2 ** ZIPF_S, rel=0.05)


def test_the_hot_key_holds_its_share_and_the_others_are_uniform() -> None:
    keys, rows = 1_000, 200_000
    drawn = drawn_keys(np.random.default_rng(2), "hot", rows, keys)
    assert (drawn == 0).mean() == pytest.approx(HOT_SHARE, abs=0.005)
    others = np.bincount(drawn[drawn != 0], minlength=keys)[1:]
    assert others.max() / others.mean() < 1.5 and drawn.max() < keys


def test_spread_is_the_largest_over_the_mean() -> None:
    assert spread({0: 10, 1: 30, 2: 20}) == {"largest": 30, "mean": 20.0, "largest_over_mean": 1.5}


def test_a_task_s_first_call_is_set_apart_from_the_shards_own_time() -> None:
    def call(shard: int, worker: int, started_ms: float, took_ms: float) -> dict[str, float]:
        return {"shard": shard, "worker": worker, "started_ms": started_ms, "took_ms": took_ms, "rows": 10,
                "received": 10, "waited_ms": 0.0}
    # two workers; each micro-batch's first call on a worker pays 20 ms more, whichever shard it runs
    batches = [[call(0, 1, 100.0, 24.0), call(1, 1, 130.0, 4.0), call(2, 2, 101.0, 4.0), call(3, 2, 99.0, 24.0)],
               [call(0, 1, 205.0, 4.0), call(1, 1, 200.0, 24.0), call(2, 2, 199.0, 24.0), call(3, 2, 230.0, 4.0)]]
    got = shard_spreads(batches)
    assert got["shard_ms"]["largest_over_mean"] == 1.0  # every shard was first once
    assert got["first_call_ms"] == 24.0 and got["other_call_ms"] == 4.0
    assert got["shard_ms_after_first"] == spread({0: 4.0, 1: 4.0, 2: 4.0, 3: 4.0})
