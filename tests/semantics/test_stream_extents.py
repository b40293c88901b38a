"""The streaming oracle's count, rolling and landmark windows against the
batch oracle: with disorder within the lateness nothing is late and, once a
final punctuation closes everything, the final emissions are exactly the
batch windows; arrival ranks are batch ranks ordered by micro-batch; the
accounting identity holds and order inside a micro-batch does not matter."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.transcript import is_punctuation
from wid import Aggregation, Punctuation, Window
from wid.semantics import evaluate
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.semantics.windowing import Landmark

AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("last", "v", as_="last_v"))
FLUSH_MS = 10**6


@st.composite
def shapes(draw: st.DrawFn, kind: str) -> dict[str, Any]:
    if kind == "count":
        size, hop = draw(st.sampled_from([(3, 1), (3, 2), (4, 4), (2, 1), (5, 2)]))
        keys = draw(st.sampled_from([{"partition_by": ("k",)}, {"group_by": ("k",)}, {"partition_by": ("k",),
                                                                                       "group_by": ("g",)}]))
        return {"size_rows": size, "hop_rows": hop, **keys}
    if kind == "rolling":
        return {"duration_ms": draw(st.sampled_from([1, 10, 25])), "every_rows": draw(st.sampled_from([None, 2, 3])),
                "group_by": ("k",)}
    return {"hop_ms": 10, "landmark_ms": -30, "max_duration_ms": draw(st.sampled_from([None, 30])), "group_by": ("k",)}


def window(kind: str, shape: dict[str, Any], **extra: Any) -> Window:
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", aggregations=AGGS,
                  punctuation=Punctuation("punct"), **shape, **extra)


@st.composite
def streams(draw: st.DrawFn, disorder_ms: int, ties: bool = True) -> list[MicroBatch]:
    """Rows with times ``i*3 + [0, 3) - 20`` (ms; some tied), shuffled by up to
    `disorder_ms`, cut into up to five micro-batches."""
    n = draw(st.integers(0, 30))
    rng = random.Random(draw(st.integers(0, 2**32)))
    times = [(i * 3 + rng.randrange(3) - 20) // (2 if ties else 1) for i in range(n)]
    rows = [{"ts": t, "k": rng.choice("ab"), "g": rng.choice("xy"), "v": rng.randrange(-5, 9), "id": i}
            for i, t in enumerate(times)]
    rows.sort(key=lambda r: r["ts"] + rng.randrange(disorder_ms + 1))
    cuts = sorted(rng.sample(range(n + 1), min(n + 1, draw(st.integers(0, 4)))))
    bounds = [0, *cuts, n]
    return [MicroBatch([("a", r) for r in rows[a:b]], i) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def flush_ms(w: Window, rows: list[dict[str, Any]]) -> int:
    """A punctuation time that closes everything the batch oracle emits: for
    landmark windows exactly the end of the window holding the latest row,
    or of its period with max_duration_ms (batch runs landmark windows up
    to there), else far in the future."""
    if w.kind != "landmark":
        return FLUSH_MS
    marks = Landmark((w.hop_ms or 0) * 1000, (w.landmark_ms or 0) * 1000,
                     None if w.max_duration_ms is None else w.max_duration_ms * 1000)
    last = max([marks.pane(r["ts"] * 1000) for r in rows] + [0])
    end = marks.period_end_wid(last)
    return marks.bounds(last if end is None else end)[1] // 1000


def finals(batches: list[MicroBatch], w: Window) -> list[str]:
    rows = [r for b in batches for _, r in b.rows]
    flush = MicroBatch([("a", {"ts": flush_ms(w, rows), "punct": True})], len(batches))
    results = run_stream([*batches, flush], w, is_punctuation)
    assert all(r.rows_late_dropped == 0 and not r.late for r in results)
    return sorted(repr(e.row) for r in results for e in r.emitted if e.final)


@pytest.mark.parametrize("kind", ["count", "rolling", "landmark"])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_within_the_lateness_the_stream_equals_batch(kind: str, data: st.DataObject) -> None:
    batches = data.draw(streams(disorder_ms=12))
    extra = {"tie_breaker": "id"} if kind != "landmark" and data.draw(st.booleans()) else {}
    w = window(kind, data.draw(shapes(kind)), lateness_ms=12, **extra,
               late_mode=data.draw(st.sampled_from(["generous", "consistent"])))
    rows = [r for b in batches for _, r in b.rows]
    assert finals(batches, w) == sorted(repr(r) for r in evaluate(rows, w).rows)


@pytest.mark.parametrize("kind", ["count", "rolling"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_arrival_ranks_are_batch_ranks_ordered_by_micro_batch(kind: str, data: st.DataObject) -> None:
    # rows arrive far out of order; a batch ordered by (micro-batch, ts, the other columns) ranks as the stream does
    batches = data.draw(streams(disorder_ms=40))
    shape = data.draw(shapes(kind))
    if kind == "rolling":
        shape["every_rows"] = data.draw(st.sampled_from([2, 3]))
    w = window(kind, shape, rank_by="arrival", lateness_ms=100)
    tagged = [MicroBatch([(s, {**r, "arrived": i}) for s, r in b.rows], b.batch_ms) for i, b in enumerate(batches)]
    rows = [r for b in tagged for _, r in b.rows]
    want = evaluate(rows, window(kind, shape, order_by="arrived", lateness_ms=100)).rows
    assert finals(tagged, w) == sorted(repr(r) for r in want)


@pytest.mark.parametrize("kind", ["count", "rolling", "landmark"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_identity_holds_and_order_within_a_batch_does_not_matter(kind: str, data: st.DataObject) -> None:
    batches = data.draw(streams(disorder_ms=40))
    shape = data.draw(shapes(kind))
    policy = data.draw(st.sampled_from(["drop", "dlq"] if kind == "count" else ["drop", "dlq", "reopen"]))
    if kind == "rolling" and policy == "reopen":
        shape["every_rows"] = None
    w = window(kind, shape, lateness_ms=3, late_data=policy, allowed_lateness_ms=8 if policy == "reopen" else None,
               emit=data.draw(st.sampled_from(["on_close", "on_update"])) if "every_rows" not in shape
               or shape["every_rows"] is None else "on_close", tie_breaker="id" if kind != "landmark" else None,
               late_mode=data.draw(st.sampled_from(["generous", "consistent"])))
    results = run_stream(batches, w)
    for r in results:
        assert r.rows_in == r.rows_rejected + r.rows_late_dropped + r.rows_late_dlq + r.rows_aggregated
    rng = random.Random(data.draw(st.integers(0, 99)))
    again = run_stream([MicroBatch(rng.sample(list(b.rows), len(b.rows)), b.batch_ms) for b in batches], w)
    for a, b in zip(results, again, strict=True):
        assert sorted(map(repr, a.emitted)) == sorted(map(repr, b.emitted))
        assert (a.rows_late_dropped, len(a.late), a.watermark_us) == (b.rows_late_dropped, len(b.late), b.watermark_us)


def test_q3_and_q4_differ_on_the_same_stream() -> None:
    """The paper's Q3 (the last 3 rows of the whole stream, then split by
    segment) and Q4 (the last 3 rows of each segment)."""
    #   stream (ts):  a1 a2 b3 a4 b5 b6      tumbling count windows of 3 rows
    #   Q3: ranks over the stream: w0 = {a1 a2 b3}, w1 = {a4 b5 b6} -> per segment counts a:2 b:1, a:1 b:2
    #   Q4: ranks per segment:     a: w0 = {a1 a2 a4};  b: w0 = {b3 b5 b6}
    rows = [{"seg": s, "ts": t} for s, t in (("a", 1), ("a", 2), ("b", 3), ("a", 4), ("b", 5), ("b", 6))]
    flush = MicroBatch([("a", {"ts": FLUSH_MS, "punct": True})])
    batches = [MicroBatch([("a", r) for r in rows[:4]]), MicroBatch([("a", r) for r in rows[4:]]), flush]
    base = {"kind": "count", "size_rows": 3, "event_time_column": "ts", "event_time_unit": "ms",
            "aggregations": (Aggregation("count", as_="n"),), "punctuation": Punctuation("punct")}
    q3 = Window(**base, group_by=("seg",))
    q4 = Window(**base, partition_by=("seg",))

    def got(w: Window) -> list[tuple[Any, ...]]:
        return sorted((e.row["window_id"], e.row["seg"], e.row["n"]) for r in run_stream(batches, w, is_punctuation)
                      for e in r.emitted)
    assert got(q3) == [(0, "a", 2), (0, "b", 1), (1, "a", 1), (1, "b", 2)]
    assert got(q4) == [(0, "a", 3), (0, "b", 3)]


def test_order_by_other_than_the_event_time_has_no_stream_semantics() -> None:
    w = window("count", {"size_rows": 2}, order_by="v")
    with pytest.raises(ValueError, match="order_by"):
        run_stream([], w)
    run_stream([], window("count", {"size_rows": 2}, order_by="v", rank_by="arrival"))
