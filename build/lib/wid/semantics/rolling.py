"""Rolling (slide-by-tuple) extents: for a row t, the rows u of its group with
``t.ts - d < u.ts <= t.ts`` (pandas ``rolling(d, closed="right")``; the
paper's slide-by-tuple windows). Rows tied with t on ts are included."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


def rolling_extent(sorted_ts: Sequence[int], t_us: int, duration_us: int) -> range:
    """Indices into ascending `sorted_ts` of the extent of a row at `t_us`."""
    return range(bisect_right(sorted_ts, t_us - duration_us), bisect_right(sorted_ts, t_us))
