"""The window-join oracle on DolphinDB's two documented createWindowJoinEngine
examples, with fixed values in place of `rand`. Expected rows are worked out
by hand from DolphinDB's stated rules (window a:b is [t+a, t+b], both ends in;
0:0 is [t_prev, t)), not taken from any engine's output."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from wid.semantics import reasons
from wid.semantics.window_join import window_join
from wid.spec import Aggregation
from wid.spec.join import ColumnMetric, WindowJoin

T0 = datetime(2012, 1, 1)


def ms(n: int) -> datetime:
    return T0 + timedelta(milliseconds=n)


# Example 1: n = 10; tp1 = take(T0 + 0..10, 20) with sym = 10 x A then 10 x B,
# price = take(NULL join rand(10.0, 9), 20); tp2 the same times and syms with
# val = take(1..10, 20). So (times in ms):
#   left  A: t = 0..9, price NULL at 0 then P[1..9];  B: t = 10 (NULL), 0..8 (P[1..9])
#   right A: t = 0..9, val = t + 1;                   B: t = 10 (val 1), 0..8 (val = t + 2)
P = [None, 5.2705, 1.0179, 2.5, 3.5, 4.5, 6.5, 7.5, 8.5, 9.5]  # P[1], P[2] as in the documented output


def example_one() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    times = [*range(11), *range(9)]
    syms = ["A"] * 10 + ["B"] * 10
    left = [{"time": ms(t), "sym": s, "price": P[i % 10]} for i, (t, s) in enumerate(zip(times, syms, strict=True))]
    right = [{"time": ms(t), "sym": s, "val": float(i % 10 + 1)}
             for i, (t, s) in enumerate(zip(times, syms, strict=True))]
    return left, right


EXAMPLE_ONE = WindowJoin(window=(-2, 2), metrics=(ColumnMetric("val", as_="factor2"),
                                                 Aggregation("sum", "val", as_="factor3")),
                         matching_column="sym", time_column="time",
                         null_fill={"price": 0.0, "factor2": 0.0, "factor3": 0.0})


def test_documented_window_minus_two_to_two_with_null_fill() -> None:
    """A at t=0: window [-2, 2] holds A's right rows at 0, 1, 2 (val 1, 2, 3),
    so three rows, each with sum 6; price is NULL, filled with 0.
    A at t=1: [-1, 3] holds 0..3 (val 1..4), sum 10. B at t=0: B's right rows
    at 0, 1, 2 have val 2, 3, 4, sum 9. B at t=1: 0..3, val 2..5, sum 14.

        right A   0  1  2  3  4 ...         right B   0  1  2  3  4 ...
        left A@0 [------]                   left B@0 [------]
        left A@1 [---------]                left B@1 [---------]
    """
    left, right = example_one()
    out = window_join(left, right, EXAMPLE_ONE).rows
    early = sorted((r for r in out if r["time"] <= ms(1)), key=lambda r: (r["sym"], r["time"], r["factor2"]))
    want = [(ms(0), "A", 0.0, 1.0, 6.0), (ms(0), "A", 0.0, 2.0, 6.0), (ms(0), "A", 0.0, 3.0, 6.0),
            (ms(1), "A", 5.2705, 1.0, 10.0), (ms(1), "A", 5.2705, 2.0, 10.0), (ms(1), "A", 5.2705, 3.0, 10.0),
            (ms(1), "A", 5.2705, 4.0, 10.0),
            (ms(0), "B", 5.2705, 2.0, 9.0), (ms(0), "B", 5.2705, 3.0, 9.0), (ms(0), "B", 5.2705, 4.0, 9.0),
            (ms(1), "B", 1.0179, 2.0, 14.0), (ms(1), "B", 1.0179, 3.0, 14.0), (ms(1), "B", 1.0179, 4.0, 14.0),
            (ms(1), "B", 1.0179, 5.0, 14.0)]
    assert [tuple(r.values()) for r in early] == want
    assert list(out[0]) == ["time", "sym", "price", "factor2", "factor3"]


def test_documented_window_minus_two_to_two_whole_output() -> None:
    """Rows per left row = right rows in [t-2, t+2] of its key:
    A (right at 0..9):      t = 0..9  -> 3, 4, 5, 5, 5, 5, 5, 5, 4, 3  = 44
    B (right at 0..8, 10):  t = 0..8  -> 3, 4, 5, 5, 5, 5, 5, 4, 4; t = 10 -> 2 (at 8 and 10) = 42
    B at t=10 has a NULL price (filled with 0) and vals 10 (t=8) and 1 (t=10), sum 11."""
    left, right = example_one()
    out = window_join(left, right, EXAMPLE_ONE).rows
    assert len(out) == 86
    assert sum(r["sym"] == "A" for r in out) == 44
    b10 = sorted((r["price"], r["factor2"], r["factor3"]) for r in out if r["sym"] == "B" and r["time"] == ms(10))
    assert b10 == [(0.0, 1.0, 11.0), (0.0, 10.0, 11.0)]


# Example 2 (window 0:0): left A at 1, 5, 10, 15 ms; right A at 1, 2, 3, 4, 5,
# 6, 9, 15 ms. The values are the documented output's.
LEFT_TWO = [{"time": ms(t), "sym": "A", "price": p} for t, p in zip((1, 5, 10, 15), (8.8252, 7.1195, 5.2217, 9.2517),
                                                                  strict=True)]
VALS = (7.495792, 9.417891, 1.419681, 3.040736, 4.840462, 8.086567, 3.495306, 2.0)
RIGHT_TWO = [{"time": ms(t), "sym": "A", "val": v} for t, v in zip((1, 2, 3, 4, 5, 6, 9, 15), VALS, strict=True)]


def test_documented_special_window() -> None:
    """Extents [t_prev, t):

        right         1  2  3  4  5  6     9          15
        left 1     ..)                                        nothing before 1
        left 5        [----------)                            1, 2, 3, 4
        left 10                   [-----------)               5, 6, 9
        left 15                                [------)       nothing in [10, 15)
    """
    join = WindowJoin(window=(0, 0), metrics=(ColumnMetric("val"), Aggregation("sum", "val", as_="sum_val")),
                      matching_column="sym", time_column="time")
    out = window_join(LEFT_TWO, RIGHT_TWO, join).rows
    assert [list(r) for r in out][0] == ["time", "sym", "price", "val", "sum_val"]
    got = [(r["time"], r["price"], r["val"], r["sum_val"]) for r in out]
    assert got[0] == (ms(1), 8.8252, [], None)
    assert got[1][:3] == (ms(5), 7.1195, [7.495792, 9.417891, 1.419681, 3.040736])
    assert got[1][3] == pytest.approx(21.374100)
    assert got[2][:3] == (ms(10), 5.2217, [4.840462, 8.086567, 3.495306])
    assert got[2][3] == pytest.approx(16.422335)
    assert got[3] == (ms(15), 9.2517, [], None)


def test_special_window_first_left_row_takes_everything_before_it() -> None:
    """t_prev of a key's first left row is minus infinity.

        right   1  2        7
        left          3        8
        extent [----)  [------)
    """
    left = [{"t": 3, "k": 1}, {"t": 8, "k": 1}]
    right = [{"t": t, "k": 1, "v": t} for t in (1, 2, 7)]
    join = WindowJoin(window=(0, 0), metrics=(Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")),
                      matching_column="k", time_column="t", time_unit="ms")
    assert [(r["t"], r["n"], r["s"]) for r in window_join(left, right, join).rows] == [(3, 2, 3), (8, 1, 7)]


def test_special_window_tied_left_rows() -> None:
    """Two left rows at 5: the first (by the other left columns: id 1 before
    id 2) gets [2, 5); the second [5, 5), empty. The right row at 5 goes to
    the next left row, [5, 9).

        right      3  4  5        8
        left    2        5 5         9
    """
    left = [{"t": 5, "k": "x", "id": 2}, {"t": 2, "k": "x", "id": 0}, {"t": 5, "k": "x", "id": 1},
            {"t": 9, "k": "x", "id": 3}]
    right = [{"t": t, "k": "x", "v": float(t)} for t in (3, 4, 5, 8)]
    join = WindowJoin(window=(0, 0), metrics=(Aggregation("count", as_="n"), ColumnMetric("v", as_="vs")),
                      matching_column="k", time_column="t", time_unit="ms")
    got = sorted((r["id"], r["n"], r["vs"]) for r in window_join(left, right, join).rows)
    assert got == [(0, 0, []), (1, 2, [3.0, 4.0]), (2, 0, []), (3, 2, [5.0, 8.0])]


def test_window_after_the_left_row_and_different_names() -> None:
    """Window (1, 3) after each left row; keys and times named differently on
    the two sides. Left at 10 sees right rows in [11, 13]: 11 and 13.

        right      9  10  11  12  13  14
        left          10 [----------]
    """
    left = [{"lt": 10, "sym": "s", "venue": 1}]
    right = [{"rt": t, "s2": "s", "v2": 1, "x": t} for t in (9, 10, 11, 13, 14)] + [{"rt": 12, "s2": "s", "v2": 2, "x": 99}]
    join = WindowJoin(window=(1, 3), metrics=(Aggregation("max", "x", as_="hi"), Aggregation("count", as_="n")),
                      matching_column=(["sym", "venue"], ["s2", "v2"]), time_column=("lt", "rt"), time_unit="ms")
    assert window_join(left, right, join).rows == [{"lt": 10, "sym": "s", "venue": 1, "hi": 13, "n": 2}]


def test_bad_rows_are_rejected_with_a_reason_and_counted() -> None:
    left = [{"t": None, "k": 1}, {"t": 1, "k": None}, {"t": 2, "k": 1}]
    right = [{"t": 1, "k": None, "v": 1.0}, {"t": 2, "k": 1, "v": 2.0}]
    join = WindowJoin(window=(-1, 1), metrics=(Aggregation("sum", "v", as_="s"),), matching_column="k",
                      time_column="t", time_unit="ms")
    result = window_join(left, right, join)
    assert result.rows == [{"t": 2, "k": 1, "s": 2.0}]
    assert sorted((d.source, d.reason) for d in result.dead_letter) == [
        ("left", reasons.NULL_EVENT_TIME), ("left", reasons.null_key("k")), ("right", reasons.null_key("k"))]
    assert result.rows_in == 5 == result.rows_rejected + result.rows_aggregated


def test_empty_window_left_join_and_null_fill() -> None:
    """A left row with nothing in its window: one row, NULL metrics (count 0),
    and null_fill replaces the NULLs it names."""
    join = WindowJoin(window=(0, 5), metrics=(ColumnMetric("v"), Aggregation("avg", "v", as_="a"),
                                              Aggregation("count", as_="n")),
                      matching_column="k", time_column="t", time_unit="ms", null_fill={"a": -1.0})
    out = window_join([{"t": 100, "k": 1}], [{"t": 0, "k": 1, "v": 3.0}], join).rows
    assert out == [{"t": 100, "k": 1, "v": None, "a": -1.0, "n": 0}]


def test_sort_by_time_orders_by_left_time_then_keys() -> None:
    join = WindowJoin(window=(0, 1), metrics=(Aggregation("count", as_="n"),), matching_column="k",
                      time_column="t", time_unit="ms", sort_by_time=True)
    left = [{"t": 3, "k": "b"}, {"t": 1, "k": "b"}, {"t": 3, "k": "a"}, {"t": 2, "k": "a"}]
    assert [(r["t"], r["k"]) for r in window_join(left, [], join).rows] == [(1, "b"), (2, "a"), (3, "a"), (3, "b")]
