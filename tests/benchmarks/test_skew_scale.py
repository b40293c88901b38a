"""The skew benchmark's keys (`benchmarks.skew_scale`): Zipf(1.1) draws
follow its weights, the hot key holds its share, and the spread of a
shard measure is its largest over its mean."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.skew_scale import HOT_SHARE, ZIPF_S, drawn_keys, spread


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
