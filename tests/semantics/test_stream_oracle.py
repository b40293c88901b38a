"""The streaming oracle against the hand-worked transcripts, and its
properties: batch equality within the lateness, the accounting identity,
independence from arrival order within a micro-batch."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.transcript import Transcript, all_transcripts, is_punctuation
from wid import Aggregation, Window
from wid.semantics import evaluate
from wid.semantics.stream_oracle import MicroBatch, run_stream
from wid.spec.kinds import KINDS

TRANSCRIPTS = all_transcripts()


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=[t.name for t in TRANSCRIPTS])
def test_oracle_replays_every_transcript(transcript: Transcript) -> None:
    transcript.check(run_stream(transcript.batches, transcript.window, is_punctuation))


def test_every_policy_and_mode_has_a_transcript() -> None:
    names = {t.name for t in TRANSCRIPTS}
    for policy in ("drop", "dlq", "reopen"):
        for mode in ("generous", "consistent"):
            assert f"hopping_{mode}_{policy}" in names
    assert {"idle_source", "keyed_punctuation", "global_punctuation", "session_reopen", "kafka_partitions",
            "kafka_partition_idle"} <= names
    for kind in KINDS:  # issue 5: each kind under more than one policy and emit mode
        assert len({n for n in names if n.startswith(kind)}) >= 2


def test_without_partitions_a_source_keeps_one_watermark() -> None:
    """The kafka_partitions transcript's rows without their topic and
    partition: the source's watermark is 15 after batch 1, so y:8 in batch 2
    is late, where one watermark per partition accepted it."""
    t = next(t for t in TRANSCRIPTS if t.name == "kafka_partitions")
    plain = [MicroBatch([(s, {k: v for k, v in r.items() if k not in ("_topic", "_partition")}) for s, r in b.rows],
                        b.batch_ms) for b in t.batches]
    results = run_stream(plain, t.window)
    assert [r.watermark_us for r in results] == [15_000, 27_000, 27_000, 40_000]
    assert results[1].rows_late_dropped == 1


AGGS = (Aggregation("count", as_="n"), Aggregation("sum", "v", as_="s"), Aggregation("last", "v", as_="last_v"))


def _window(kind: str, lateness_ms: int, **extra: Any) -> Window:
    shape = {"tumbling": {"duration_ms": 10}, "hopping": {"duration_ms": 30, "hop_ms": 10},
             "session": {"gap_ms": 4}}[kind]
    return Window(kind=kind, event_time_column="ts", event_time_unit="ms", group_by=("k",), aggregations=AGGS,
                  lateness_ms=lateness_ms, **shape, **extra)


@st.composite
def streams(draw: st.DrawFn, disorder_ms: int) -> list[MicroBatch]:
    n = draw(st.integers(0, 30))
    rng = random.Random(draw(st.integers(0, 2**32)))
    times = [i * 3 + rng.randrange(3) - 20 for i in range(n)]
    rows = [{"k": rng.choice("ab"), "ts": t, "v": rng.randrange(-5, 9)} for t in times]
    rows.sort(key=lambda r: r["ts"] + rng.randrange(disorder_ms + 1))
    cuts = sorted(rng.sample(range(n + 1), min(n + 1, draw(st.integers(0, 4)))))
    bounds = [0, *cuts, n]
    return [MicroBatch([("a", r) for r in rows[a:b]], i) for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_within_the_lateness_the_stream_equals_batch(kind: str, data: st.DataObject) -> None:
    # rows arrive at most 12 ms out of order, lateness is 12 ms: nothing is late, and
    # after a final punctuation-free flush (a far-future row in its own group) every window is final
    batches = data.draw(streams(disorder_ms=12))
    window = _window(kind, 12, late_mode=data.draw(st.sampled_from(["generous", "consistent"])))
    flush = MicroBatch([("a", {"k": "zz", "ts": 10**6, "v": 0})], len(batches))
    results = run_stream([*batches, flush], window)
    assert all(r.rows_late_dropped == 0 and not r.late for r in results)
    rows = [r for b in batches for _, r in b.rows]
    final = [e.row for r in results for e in r.emitted if e.final and e.row["k"] != "zz"]
    assert sorted(map(repr, final)) == sorted(map(repr, evaluate(rows, window).rows))


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "session"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_identity_holds_and_order_within_a_batch_does_not_matter(kind: str, data: st.DataObject) -> None:
    batches = data.draw(streams(disorder_ms=40))
    policy = data.draw(st.sampled_from(["drop", "dlq", "reopen"]))
    window = _window(kind, 3, late_data=policy, allowed_lateness_ms=8 if policy == "reopen" else None,
                     emit=data.draw(st.sampled_from(["on_close", "on_update"])))
    results = run_stream(batches, window)
    for r in results:
        assert r.rows_in == r.rows_rejected + r.rows_late_dropped + r.rows_late_dlq + r.rows_aggregated
    rng = random.Random(data.draw(st.integers(0, 99)))
    shuffled = [MicroBatch(rng.sample(list(b.rows), len(b.rows)), b.batch_ms) for b in batches]
    again = run_stream(shuffled, window)
    for a, b in zip(results, again, strict=True):
        assert sorted(map(repr, a.emitted)) == sorted(map(repr, b.emitted))
        assert (a.rows_late_dropped, len(a.late), a.watermark_us) == (b.rows_late_dropped, len(b.late), b.watermark_us)


def test_punctuation_rows_are_never_aggregated() -> None:
    window = Window(kind="tumbling", duration_ms=10, event_time_column="ts", event_time_unit="ms",
                    aggregations=(Aggregation("count", as_="n"),), punctuation=__import__("wid").Punctuation("punct"))
    rows = [("a", {"ts": 1}), ("a", {"ts": 2, "punct": True}), ("a", {"ts": 20, "punct": True})]
    (result,) = run_stream([MicroBatch(rows)], window, is_punctuation)
    assert result.punctuations == 2 and result.rows_in == 1
    assert [e.row["n"] for e in result.emitted] == [1]
