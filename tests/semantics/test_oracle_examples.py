"""Hand-worked examples for the oracle. Expected rows are worked out by hand
from docs/semantics.md#window-kinds, never copied from an engine's output."""

from __future__ import annotations

from typing import Any

from wid.semantics import evaluate, reasons
from wid.spec import Aggregation, Window

S = 1_000_000  # one second in microseconds


def rows(*spec: tuple[Any, ...], cols: tuple[str, ...] = ("ts", "k", "v")) -> list[dict[str, Any]]:
    return [dict(zip(cols, r, strict=True)) for r in spec]


def win(kind: str, **kw: Any) -> Window:
    aggs = kw.pop("aggs", (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s")))
    return Window(kind=kind, event_time_column="ts", event_time_unit="us", aggregations=aggs, **kw)


def test_tumbling_and_dead_letter() -> None:
    # duration 10 s
    # |---- w0 [0,10) ----|---- w1 [10,20) ----|
    #  a@1  a@9            a@10
    #  b@5
    data = rows((1 * S, "a", 1), (9 * S, "a", 2), (10 * S, "a", 4), (5 * S, "b", 8), (None, "a", 16), (3 * S, None, 32))
    out = evaluate(data, win("tumbling", duration_ms=10_000, group_by=["k"]))
    assert out.rows == [
        {"window_start": 0, "window_end": 10 * S, "k": "a", "n": 2, "s": 3},
        {"window_start": 0, "window_end": 10 * S, "k": "b", "n": 1, "s": 8},
        {"window_start": 10 * S, "window_end": 20 * S, "k": "a", "n": 1, "s": 4},
    ]
    assert [d.reason for d in out.dead_letter] == [reasons.NULL_EVENT_TIME, reasons.null_key("k")]
    assert out.rows_in == out.rows_rejected + out.rows_aggregated == 6


def test_hopping_negative_time() -> None:
    # duration 10 s, hop 5 s; one row at -1 s lies in [-10,0) and [-5,5)
    out = evaluate(rows((-1 * S, "a", 7)), win("hopping", duration_ms=10_000, hop_ms=5_000))
    assert [(r["window_start"], r["window_end"], r["n"]) for r in out.rows] == [(-10 * S, 0, 1), (-5 * S, 5 * S, 1)]


def test_session_with_inclusive_boundary() -> None:
    # gap 10 s: 0 -> [0,10); 10 joins (ts <= end) -> [0,20); 25 starts [25,35)
    out = evaluate(rows((0, "a", 1), (10 * S, "a", 2), (25 * S, "a", 4)), win("session", gap_ms=10_000))
    assert [(r["window_start"], r["window_end"], r["s"]) for r in out.rows] == [(0, 20 * S, 3), (25 * S, 35 * S, 4)]


def test_count_windows_q3_versus_q4() -> None:
    # ranks by ts:   r0 r1 r2 r3 r4 r5
    # seg:            A  B  A  A  B  B
    # v:              1  2  4  8 16 32
    data = rows(*[(i * S, seg, v) for i, (seg, v) in enumerate(zip("ABAABB", [1, 2, 4, 8, 16, 32], strict=True))])
    aggs = (Aggregation("sum", "v", as_="s"),)
    # Q3: the last 3 rows of the whole stream, hop 3, grouped by segment:
    #   w0 = r0..r2 -> A: 1+4=5, B: 2 ; w1 = r3..r5 -> A: 8, B: 16+32=48
    q3 = evaluate(data, win("count", size_rows=3, group_by=["k"], aggs=aggs))
    assert [(r["window_id"], r["k"], r["s"], r["window_start"], r["window_end"]) for r in q3.rows] == [
        (0, "A", 5, 0, 2 * S), (0, "B", 2, 0, 2 * S), (1, "A", 8, 3 * S, 5 * S), (1, "B", 48, 3 * S, 5 * S)]
    # Q4: the last 3 rows per segment: A has r0,r2,r3 -> 13; B has r1,r4,r5 -> 50
    q4 = evaluate(data, win("count", size_rows=3, partition_by=["k"], aggs=aggs))
    assert [(r["k"], r["s"], r["window_start"], r["window_end"]) for r in q4.rows] == [
        ("A", 13, 0, 3 * S), ("B", 50, 1 * S, 5 * S)]


def test_count_windows_partial_early_and_incomplete_tail() -> None:
    # size 3, hop 2, 5 rows: w0 = ranks [0,2) (partial), w1 = [1,4); w2 = [3,6) lacks rank 5
    data = rows(*[(i * S, "a", 10**i) for i in range(5)])
    out = evaluate(data, win("count", size_rows=3, hop_rows=2, aggs=(Aggregation("sum", "v", as_="s"),)))
    assert [(r["window_id"], r["s"]) for r in out.rows] == [(0, 11), (1, 1110)]


def test_rolling_includes_ties_and_every_rows() -> None:
    # d = 10 s, extent (t-10s, t]; the two rows at 12 s see each other (ties included)
    #   t=0: {0}   t=5: {0,5}   t=12: {5,12,12}   t=12: same
    #   t=22: (12, 22] excludes the rows at exactly 12 s -> {22}
    data = rows((0, "a", 1), (5 * S, "a", 2), (12 * S, "a", 4), (12 * S, "a", 8), (22 * S, "a", 16))
    out = evaluate(data, win("rolling", duration_ms=10_000, aggs=(Aggregation("sum", "v", as_="s"),)))
    assert [(r["ts"], r["v"], r["s"]) for r in out.rows] == [
        (0, 1, 1), (5 * S, 2, 3), (12 * S, 4, 14), (12 * S, 8, 14), (22 * S, 16, 16)]
    # every 2nd row by (ts, then the other columns): ranks 2 and 4 -> (5s, v=2) and (12s, v=8)
    every = evaluate(data, win("rolling", duration_ms=10_000, every_rows=2, aggs=(Aggregation("sum", "v", as_="s"),)))
    assert [(r["ts"], r["v"], r["s"]) for r in every.rows] == [(5 * S, 2, 3), (12 * S, 8, 14)]


def test_landmark_cumulate_and_rows_before_landmark() -> None:
    # landmark 0, hop 1 s, max 2 s: [0,1) [0,2) | [2,3) [2,4) | ...; a period is finite, so the last row
    # (2.5 s) is in every window of its period, [2,4) included (Flink's CUMULATE at the end of input)
    data = rows((0, "a", 1), (int(1.5 * S), "a", 2), (int(2.5 * S), "a", 4), (-S, "a", 8))
    out = evaluate(data, win("landmark", hop_ms=1000, landmark_ms=0, max_duration_ms=2000))
    assert [(r["window_start"], r["window_end"], r["s"]) for r in out.rows] == [
        (0, S, 1), (0, 2 * S, 3), (2 * S, 3 * S, 4), (2 * S, 4 * S, 4)]
    assert [d.reason for d in out.dead_letter] == [reasons.BEFORE_LANDMARK]


def test_first_last_by_event_time_not_arrival() -> None:
    # arrival order 3 s, 1 s, 2 s: first is the value at 1 s, last the value at 3 s; nulls skipped
    data = rows((3 * S, "a", "late"), (1 * S, "a", "early"), (2 * S, "a", "mid"), (4 * S, "a", None))
    aggs = (Aggregation("first", "v", as_="f"), Aggregation("last", "v", as_="l"))
    out = evaluate(data, win("tumbling", duration_ms=10_000, aggs=aggs))
    assert (out.rows[0]["f"], out.rows[0]["l"]) == ("early", "late")
