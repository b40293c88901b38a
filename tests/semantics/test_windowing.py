"""Properties of window assignment (wids/bounds), panes, sessions and ranks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wid.semantics.ranks import count_complete, count_extent, count_wids
from wid.semantics.rolling import rolling_extent
from wid.semantics.sessions import sessionize
from wid.semantics.windowing import Hopping, Landmark, Tumbling

TS = st.integers(-(10**12), 10**12)  # about +-11 days around the epoch, negatives included
DUR = st.integers(1, 10**7)


@given(TS, DUR, st.integers(-(10**7), 10**7))
def test_tumbling_partitions_time(ts: int, d: int, origin: int) -> None:
    t = Tumbling(d, origin)
    (w,) = t.wids(ts)
    start, end = t.bounds(w)
    assert start <= ts < end
    assert end - start == d
    # neighbours tile the line with no gap and no overlap
    assert t.bounds(w + 1)[0] == end
    assert t.bounds(w - 1)[1] == start


@given(TS, st.integers(1, 1000), st.integers(1, 1000), st.integers(-5000, 5000))
def test_hopping_wids_are_exactly_the_windows_holding_ts(ts: int, a: int, b: int, origin: int) -> None:
    d, h = max(a, b), min(a, b)
    hop = Hopping(d, h, origin)
    ids = hop.wids(ts)
    for w in ids:
        start, end = hop.bounds(w)
        assert start <= ts < end
    # the windows just outside the range do not hold ts
    for w in (ids.start - 1, ids.stop):
        start, end = hop.bounds(w)
        assert not (start <= ts < end)
    assert len(ids) in (d // h, -(-d // h))


@given(TS, st.integers(1, 1000), st.integers(1, 1000))
def test_hopping_window_is_union_of_its_panes(ts: int, a: int, b: int) -> None:
    d, h = max(a, b), min(a, b)
    hop = Hopping(d, h)
    p = hop.pane_us
    assert d % p == 0 and h % p == 0
    for w in hop.wids(ts):
        start, end = hop.bounds(w)
        first_pane = start // p
        assert first_pane * p == start and (first_pane + d // p) * p == end


def test_negative_timestamps_floor() -> None:
    # |<- w=-1 ->|<- w=0 ->|
    # -10       0         10     ts=-1 lies in w=-1, not in w=0 (no truncation toward zero)
    t = Tumbling(10)
    assert list(t.wids(-1)) == [-1]
    assert t.bounds(-1) == (-10, 0)
    assert list(Hopping(10, 5).wids(-1)) == [-2, -1]


@given(TS, st.integers(1, 100), st.integers(-1000, 1000), st.sampled_from([None, 1, 3, 7]), st.integers(0, 50))
def test_landmark_windows_hold_ts(ts: int, h: int, landmark: int, per: int | None, extra: int) -> None:
    m = None if per is None else per * h
    lm = Landmark(h, landmark, m)
    q = lm.pane(ts)
    ids = lm.wids(ts, max(q, 0) + extra)
    if ts < landmark:
        assert len(ids) == 0
        return
    assert ids.start == q
    for w in ids:
        start, end = lm.bounds(w)
        assert start <= ts < end
    if m is not None and len(ids):
        # every window of the range lies in the same period as the row
        assert len({lm.bounds(w)[0] for w in ids}) == 1


def test_landmark_cumulate_periods() -> None:
    # hop 1, max 3: windows [0,1) [0,2) [0,3) | [3,4) [3,5) [3,6) | ...
    lm = Landmark(1, 0, 3)
    assert [lm.bounds(w) for w in range(5)] == [(0, 1), (0, 2), (0, 3), (3, 4), (3, 5)]
    assert list(lm.wids(1, 10)) == [1, 2]
    assert list(lm.wids(4, 10)) == [4, 5]


@given(st.integers(0, 200), st.integers(1, 10), st.integers(1, 10))
def test_count_wids_match_extents(rank: int, a: int, b: int) -> None:
    size, hop = max(a, b), min(a, b)
    ids = count_wids(rank, size, hop)
    for w in ids:
        assert rank in count_extent(w, size, hop)
    for w in (ids.start - 1, ids.stop):
        if w >= 0:
            assert rank not in count_extent(w, size, hop)


def test_count_windows_paper_example() -> None:
    # size 3, hop 2 over ranks 0..6:
    # w0 = [0,2)  w1 = [1,4)  w2 = [3,6)  (w3 = [5,8) incomplete with 7 rows)
    assert [list(count_extent(w, 3, 2)) for w in range(3)] == [[0, 1], [1, 2, 3], [3, 4, 5]]
    assert [count_complete(w, 7, 2) for w in range(4)] == [True, True, True, False]


@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(1, 50)), min_size=1, max_size=40))
def test_sessions_cover_rows_and_are_separated(rows: list[tuple[int, int]]) -> None:
    sessions = sessionize(rows)
    assert sorted(i for _, _, idx in sessions for i in idx) == list(range(len(rows)))
    for start, end, idx in sessions:
        assert start == min(rows[i][0] for i in idx)
        assert end == max(rows[i][0] + rows[i][1] for i in idx)
    for (_, end_a, _), (start_b, _, _) in zip(sessions, sessions[1:], strict=False):
        assert start_b > end_a  # a row exactly at the end would have joined (Spark's rule)


@given(st.lists(st.tuples(st.integers(-1000, 1000), st.integers(1, 50)), min_size=1, max_size=40))
def test_sessions_do_not_depend_on_row_order(rows: list[tuple[int, int]]) -> None:
    def shape(rs: list[tuple[int, int]]) -> list[tuple[int, int, list[tuple[int, int]]]]:
        return [(s, e, sorted(rs[i] for i in idx)) for s, e, idx in sessionize(rs)]
    assert shape(rows) == shape(list(reversed(rows)))


def test_session_boundary_is_inclusive() -> None:
    #  [0, 10) and a row at exactly 10 -> one session [0, 20)
    assert [(s, e) for s, e, _ in sessionize([(0, 10), (10, 10)])] == [(0, 20)]
    assert [(s, e) for s, e, _ in sessionize([(0, 10), (11, 10)])] == [(0, 10), (11, 21)]


@given(st.lists(st.integers(-100, 100), min_size=1, max_size=30), st.integers(1, 50))
def test_rolling_extent(times: list[int], d: int) -> None:
    times.sort()
    for t in times:
        got = [times[i] for i in rolling_extent(times, t, d)]
        assert got == [u for u in times if t - d < u <= t]
