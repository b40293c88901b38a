"""One picture per window kind: a short timeline of rows and the extents each
row falls in, drawn with matplotlib.

The geometry is wid's own: `layout` asks the pure functions of
`wid.semantics` (`windowing`, `sessions`, `ranks`, `rolling`) which windows
each row belongs to, so a picture cannot disagree with what wid computes
(``tests/docs/test_pictures.py`` also checks every layout against the
oracle). Times are small integers read as seconds; the functions do not care
about the unit.

    python -m tools.docs.pictures OUT_DIR     # writes OUT_DIR/<kind>.svg
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass
from pathlib import Path

from wid.semantics.ranks import count_complete, count_extent, count_wids
from wid.semantics.rolling import rolling_extent
from wid.semantics.sessions import sessionize
from wid.semantics.windowing import Hopping, Landmark, Tumbling

# The rows every picture draws (event times in seconds), and each kind's parameters.
TIMES = (1, 3, 4, 9, 14, 15, 22, 26)
SESSION_TIMES = (1, 3, 4, 12, 14, 22, 23, 26)
PARAMS: dict[str, dict[str, int]] = {
    "tumbling": {"duration": 10},
    "hopping": {"duration": 10, "hop": 5},
    "session": {"gap": 4},
    "count": {"size_rows": 3, "hop_rows": 2},
    "rolling": {"duration": 6},
    "landmark": {"hop": 5, "landmark": 0, "max_duration": 15},
}
KINDS = tuple(PARAMS)


@dataclass(frozen=True)
class Extent:
    """One window: its bounds as wid reports them and the indices of its rows."""

    label: str
    start: int
    end: int
    rows: tuple[int, ...]
    bounds: str = "[)"  # which ends the extent includes: "[)" half-open, "[]" (count), "(]" (rolling)


@dataclass(frozen=True)
class Layout:
    """A picture's content: the rows' event times and the extents."""

    kind: str
    caption: str
    times: tuple[int, ...]
    extents: tuple[Extent, ...]


def layout(kind: str) -> Layout:
    """The rows and extents of the picture of `kind`, from wid's semantics."""
    p = PARAMS[kind]
    if kind in ("tumbling", "hopping"):
        d, h = p["duration"], p.get("hop", p["duration"])
        geometry = Tumbling(d) if kind == "tumbling" else Hopping(d, h)
        ids = sorted({w for t in TIMES for w in geometry.wids(t)})
        extents = tuple(Extent(f"w{w}", *geometry.bounds(w), tuple(i for i, t in enumerate(TIMES)
                                                                  if w in geometry.wids(t))) for w in ids)
        caption = (f"tumbling, duration {d} s: window w is [w·{d}, (w+1)·{d}); each row is in exactly one"
                   if kind == "tumbling" else
                   f"hopping, duration {d} s, hop {h} s: window w is [w·{h}, w·{h} + {d}); each row is in {d // h}")
        return Layout(kind, caption, TIMES, extents)
    if kind == "session":
        gap = p["gap"]
        sessions = sessionize([(t, gap) for t in SESSION_TIMES])
        extents = tuple(Extent(f"s{i}", start, end, tuple(sorted(rows)))
                        for i, (start, end, rows) in enumerate(sessions))
        return Layout(kind, f"session, gap {gap} s: a run of rows each at most the gap after the "
                      "running end; the extent is [first row, last row + gap)", SESSION_TIMES, extents)
    if kind == "count":
        size, hop = p["size_rows"], p["hop_rows"]
        n = len(TIMES)  # TIMES is sorted, so a row's rank is its index
        ids = sorted({w for r in range(n) for w in count_wids(r, size, hop) if count_complete(w, n, hop)})
        extents = []
        for w in ids:
            ranks = tuple(count_extent(w, size, hop))
            extents.append(Extent(f"w{w}", TIMES[ranks[0]], TIMES[ranks[-1]], ranks, "[]"))
        return Layout(kind, f"count, {size} rows every {hop}: window w holds ranks "
                      f"[max(0, (w+1)·{hop} − {size}), (w+1)·{hop}); start and end are its first and last "
                      "event time", TIMES, tuple(extents))
    if kind == "rolling":
        d = p["duration"]
        extents = []
        for i, t in enumerate(TIMES):
            rows = tuple(rolling_extent(TIMES, t, d))
            extents.append(Extent(f"row {i}", t - d, t, rows, "(]"))
        return Layout(kind, f"rolling, duration {d} s: one extent per row t, the rows u with "
                      f"t − {d} < u ≤ t", TIMES, tuple(extents))
    if kind == "landmark":
        h, start, m = p["hop"], p["landmark"], p["max_duration"]
        geometry = Landmark(h, start, m)
        last = max(geometry.pane(t) for t in TIMES)
        ids = sorted({w for t in TIMES for w in geometry.wids(t, last)})
        extents = tuple(Extent(f"w{w}", *geometry.bounds(w),
                               tuple(i for i, t in enumerate(TIMES) if w in geometry.wids(t, last))) for w in ids)
        return Layout(kind, f"landmark, hop {h} s from {start} s, restarting every {m} s (Flink's CUMULATE): "
                      f"window w is [period start, {start} + (w+1)·{h})", TIMES, extents)
    raise ValueError(f"unknown window kind {kind!r}")


def draw(lay: Layout) -> str:
    """`lay` as an SVG document: the rows on top, one bar per extent below,
    each extent's rows marked on its bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "wid"  # stable ids: the same layout gives the same file
    n = len(lay.extents)
    fig, ax = plt.subplots(figsize=(7.5, 1.1 + 0.28 * n))
    lo = min(min(lay.times), *(e.start for e in lay.extents)) - 1
    hi = max(max(lay.times), *(e.end for e in lay.extents)) + 1
    ax.scatter(lay.times, [0] * len(lay.times), color="black", zorder=3, s=22)
    for i, t in enumerate(lay.times):
        ax.annotate(str(i), (t, 0), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
    for y, e in enumerate(lay.extents, start=1):
        ax.plot([e.start, e.end], [-y, -y], color="tab:blue", linewidth=5, alpha=0.35, solid_capstyle="butt")
        for x, mark in ((e.start, e.bounds[0]), (e.end, e.bounds[1])):
            ax.plot([x], [-y], marker=f"${mark}$", color="tab:blue", markersize=8)
        ax.scatter([lay.times[r] for r in e.rows], [-y] * len(e.rows), color="tab:blue", zorder=3, s=14)
        ax.text(lo - 0.3, -y, e.label, ha="right", va="center", fontsize=7)
    ax.text(lo - 0.3, 0, "rows", ha="right", va="center", fontsize=7)
    ax.set_xlim(lo - 3, hi)
    ax.set_ylim(-n - 0.7, 0.9)
    ax.set_yticks([])
    ax.set_xticks(range((lo // 5) * 5 + 5 if lo % 5 else lo, hi + 1, 5))
    ax.set_xlabel("event time (s)", fontsize=8)
    ax.tick_params(labelsize=7)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(lay.caption, fontsize=8, loc="left")
    fig.tight_layout()
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)
    return out.getvalue()


def all_pictures() -> dict[str, str]:
    """``{kind: svg}`` for every window kind."""
    return {kind: draw(layout(kind)) for kind in KINDS}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    for kind, svg in all_pictures().items():
        (out / f"{kind}.svg").write_text(svg, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
