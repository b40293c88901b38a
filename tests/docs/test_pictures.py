"""The window-kind pictures of the docs (`tools.docs.pictures`) show what wid
computes: each picture's extents are the windows the batch oracle emits for
the same rows, with the same number of rows in each."""

from __future__ import annotations

from typing import Any

import pytest

from tools.docs import pictures
from wid import Aggregation, Window
from wid.semantics import evaluate

SPEC: dict[str, dict[str, Any]] = {
    "tumbling": {"duration_ms": 10},
    "hopping": {"duration_ms": 10, "hop_ms": 5},
    "session": {"gap_ms": 4},
    "count": {"size_rows": 3, "hop_rows": 2},
    "rolling": {"duration_ms": 6},
    "landmark": {"hop_ms": 5, "landmark_ms": 0, "max_duration_ms": 15},
}


@pytest.mark.parametrize("kind", pictures.KINDS)
def test_a_picture_shows_the_oracles_windows(kind: str) -> None:
    lay = pictures.layout(kind)
    window = Window(kind=kind, event_time_column="ts", event_time_unit="ms",
                    aggregations=[Aggregation("count", as_="n")], **SPEC[kind])
    rows = [{"ts": t} for t in lay.times]
    got = evaluate(rows, window).rows
    if kind == "rolling":  # one output row per input row, counting its extent
        assert sorted((r["ts"], r["n"]) for r in got) == sorted((lay.times[e.rows[-1]], len(e.rows))
                                                                for e in lay.extents)
        # the extent (t - d, t] holds exactly the rows in it
        for e in lay.extents:
            assert set(e.rows) == {i for i, t in enumerate(lay.times) if e.start < t <= e.end}
        return
    want = sorted((e.start * 1000, e.end * 1000, len(e.rows)) for e in lay.extents)
    assert sorted((r["window_start"], r["window_end"], r["n"]) for r in got) == want
    if kind in ("tumbling", "hopping", "landmark", "session"):  # half-open time extents hold the rows inside them
        for e in lay.extents:
            assert set(e.rows) == {i for i, t in enumerate(lay.times) if e.start <= t < e.end}


def test_pictures_are_svg_and_deterministic() -> None:
    svg = pictures.draw(pictures.layout("hopping"))
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert svg == pictures.draw(pictures.layout("hopping"))
