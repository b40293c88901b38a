"""`wid.spark.pane_plan`: the rows per key and pane it samples, against
pandas computing the same figure over the same first rows, and the plan
each setting forces."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

from wid.spark import pane_plan
from wid.spark.arrow_merge import CONF


def _frame(keys: int, rows: int, span: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.integers(0, keys, rows), "g": rng.integers(0, 2, rows),
                         "t": rng.integers(0, span, rows)})


def _rows_per_cell(first: pd.DataFrame) -> float:
    """Rows per key and pane (t // 10) of `first`, counted in the panes
    strictly inside its range of panes where those hold at least half its
    rows (its first and last panes may be cut short), else in all."""
    pane = first.t // 10
    inner = first[(pane > pane.min()) & (pane < pane.max())]
    counted = inner if 2 * len(inner) >= len(first) else first
    return len(counted) / len(counted.groupby(["k", "g", counted.t // 10]))


@pytest.mark.parametrize(("keys", "rows", "span", "sample"), [(3, 50, 1000, 100), (40, 5000, 200, 700),
                                                            (40, 5000, 200, 2500), (200, 3000, 7, 3000)])
def test_density_is_rows_per_key_and_pane_in_the_first_rows(spark: Any, keys: int, rows: int, span: int,
                                                            sample: int) -> None:
    frame = _frame(keys, rows, span, seed=keys).sort_values("t", kind="stable")  # in event-time order
    pane = F.floor(F.col("t") / 10).cast("long")
    got = pane_plan.density(spark.createDataFrame(frame), ["k", "g"], pane, sample)
    assert got == pytest.approx(_rows_per_cell(frame.head(sample)))


@pytest.mark.parametrize(("order", "rows", "span", "taken"), [("none", 5000, 200, 200), ("time", 5000, 200, 2000),
                                                              ("time", 150, 200, 150)])
def test_the_small_sample_stands_where_whole_panes_fill_it(spark: Any, monkeypatch: pytest.MonkeyPatch, order: str,
                                                           rows: int, span: int, taken: int) -> None:
    """Rows in no order fill the first sample with whole panes; dense rows
    in event-time order (250 rows a pane) put the first 200 rows in one
    pane, so the larger sample is taken; an input smaller than the first
    sample is all there is."""
    monkeypatch.setattr(pane_plan, "FIRST_ROWS", 200)
    monkeypatch.setattr(pane_plan, "SAMPLE_ROWS", 2000)
    frame = _frame(40, rows, span, seed=3)
    if order == "time":
        frame = frame.sort_values("t", kind="stable")
    got = pane_plan.sample(spark.createDataFrame(frame), ["k", "g"], F.floor(F.col("t") / 10).cast("long"))
    assert got is not None and got.rows == taken
    assert got.density == pytest.approx(_rows_per_cell(frame.head(taken)))


def test_no_rows_have_no_density_and_take_the_two_phase_plan(spark: Any) -> None:
    df = spark.createDataFrame([], "k long, t long")
    assert pane_plan.density(df, ["k"], F.col("t")) is None
    assert not pane_plan.choose(df, ["k"], F.col("t")).fused


@pytest.mark.parametrize(("setting", "fused"), [("fused", True), ("arrow", False), ("spark", False)])
def test_a_setting_forces_its_plan_without_the_pass(spark: Any, setting: str, fused: bool) -> None:
    df = spark.createDataFrame(_frame(3, 50, 1000, seed=1))  # sparse: left to itself, wid would fuse
    spark.conf.set(CONF, setting)
    try:
        choice = pane_plan.choose(df.where(F.raise_error("the pass ran") == F.lit(1)), ["k"], F.col("t"))
    finally:
        spark.conf.unset(CONF)
    assert choice.fused is fused and setting in choice.why


def test_an_input_sampled_before_reuses_its_density_and_another_is_sampled(spark: Any) -> None:
    df = spark.createDataFrame(_frame(4, 60, 1000, seed=7))
    first = pane_plan.choose(df, ["k"], F.col("t"))
    again = pane_plan.choose(spark.createDataFrame(_frame(4, 60, 1000, seed=7)), ["k"], F.col("t"))  # same plan
    other = pane_plan.choose(df.where(F.col("t") > 500), ["k"], F.col("t"))
    assert "sampled now" in first.why and "sampled now" in other.why
    assert "earlier query over the same input" in again.why and again.fused == first.fused
