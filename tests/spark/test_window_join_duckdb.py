"""Independent cross-check: DuckDB SQL computes the same window join as a
range join plus a group-by per left row, with no wid code, and every
aggregate metric agrees with wid.window_join's."""

from __future__ import annotations

import math
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import wid
from wid.spec import Aggregation

S = 1_000_000
METRICS = (Aggregation("count", as_="n"), Aggregation("count", "v", as_="nv"), Aggregation("sum", "v", as_="s"),
           Aggregation("avg", "v", as_="a"), Aggregation("min", "v", as_="lo"), Aggregation("max", "v", as_="hi"),
           Aggregation("sum2", "v", as_="s2"), Aggregation("std", "v", as_="sd"), Aggregation("var", "v", as_="var"),
           Aggregation("corr", "v", column2="w", as_="r"), Aggregation("covar", "v", column2="w", as_="cv"),
           Aggregation("beta", "v", column2="w", as_="b"), Aggregation("wavg", "v", column2="w", as_="wa"),
           Aggregation("wsum", "v", column2="w", as_="ws"), Aggregation("med", "v", as_="md"),
           Aggregation("percentile", "v", percent=25.0, as_="p25"), Aggregation("first", "v", as_="fst"),
           Aggregation("last", "v", as_="lst"))
DUCK = """
SELECT l.id, count(r.ts), count(r.v), sum(r.v), avg(r.v), min(r.v), max(r.v), sum(r.v * r.v), stddev_samp(r.v),
       var_samp(r.v), corr(r.v, r.w), covar_samp(r.v, r.w), regr_slope(r.v, r.w),
       sum(r.v * r.w) / sum(CASE WHEN r.v IS NOT NULL THEN r.w END), sum(r.v * r.w), median(r.v),
       quantile_cont(r.v, 0.25), min(CASE WHEN r.v IS NOT NULL THEN {{'t': r.ts, 'v': r.v}} END).v,
       max(CASE WHEN r.v IS NOT NULL THEN {{'t': r.ts, 'v': r.v}} END).v
FROM ({left}) l LEFT JOIN rt r ON r.k = l.k AND {condition}
GROUP BY l.id ORDER BY l.id
"""
STANDARD = "SELECT * FROM lt"
SPECIAL = "SELECT *, coalesce(lag(ts) OVER (PARTITION BY k ORDER BY ts), -9000000000000000000) AS prev FROM lt"


def tables(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Left rows at distinct times per key; right rows on whole seconds (many
    ties), 7 keys, some NULL values."""
    rng = np.random.default_rng(seed)
    ts = rng.choice(7_200_000, 1500, replace=False) * 1000 - 3600 * S + rng.integers(0, 1000, 1500)
    left = pd.DataFrame({"id": np.arange(1500), "ts": ts, "k": rng.choice(list("abcdefg"), 1500)})
    n = 4000
    v, w = np.round(rng.normal(10, 5, n), 3), np.round(rng.uniform(0.5, 3, n), 2)
    v[rng.random(n) < 0.05] = np.nan
    w[rng.random(n) < 0.05] = np.nan
    right = pd.DataFrame({"ts": rng.integers(-3600, 3600, n) * S, "k": rng.choice(list("abcdefgh"), n), "v": v, "w": w})
    return left, right


def close(got: Any, want: Any) -> bool:
    if want is not None and isinstance(want, float) and math.isnan(want):
        want = None  # DuckDB: NaN for an undefined statistic; wid: NULL
    if got is None or want is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("window", [(-20_000, 20_000), (0, 45_000), (-60_000, -5_000), (0, 0)])
def test_aggregates_equal_duckdb_range_join(spark: Any, window: tuple[int, int]) -> None:
    left, right = tables(seed=sum(window) % 97)
    con = duckdb.connect()
    con.register("lt", left)
    con.register("rt", right)
    a, b = window[0] * 1000, window[1] * 1000
    if window == (0, 0):
        sql = DUCK.format(left=SPECIAL, condition="r.ts >= l.prev AND r.ts < l.ts")
    else:
        sql = DUCK.format(left=STANDARD, condition=f"r.ts BETWEEN l.ts + {a} AND l.ts + {b}")
    want = con.execute(sql).fetchall()
    sides = [spark.createDataFrame(t.astype(object).where(t.notna(), None), schema)
             for t, schema in ((left, "id long, ts long, k string"), (right, "ts long, k string, v double, w double"))]
    out = wid.window_join(*sides, window=window, metrics=METRICS, matching_column="k", time_column="ts",
                          time_unit="us")
    got = sorted(tuple(r) for r in out.select("id", *[m.as_ for m in METRICS]).collect())
    assert len(got) == len(want) == len(left)
    assert sum(r[1] for r in want) > len(left)  # windows are not all empty
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0]
        for m, x, y in zip(METRICS, g[1:], w[1:], strict=True):
            assert close(x, y), f"{m.agg} as {m.as_}: wid {x!r} != DuckDB {y!r} for left row {g[0]}"
