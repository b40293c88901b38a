"""Plots shared by the scenarios (matplotlib, the Agg backend: no display)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> Path:
    """Write `fig` to `path` (its directory made if missing), close it;
    returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    return path


def throughput_bars(records: list[dict[str, Any]], path: Path, title: str,
                    labels: list[str] | None = None) -> Path:
    """Grouped bars: per record (a scenario's size or query, named by
    `labels` or the record's scenario), each engine's throughput in input
    rows per second (median run); engines that did not run or disagreed
    are left out. Writes `path` and returns it."""
    import numpy as np

    plt = pyplot()

    names = list(dict.fromkeys(e["engine"] for r in records for e in r["engines"]))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(records) + 2), 4.5))
    width = 0.8 / max(1, len(names))
    x = np.arange(len(records))
    for i, name in enumerate(names):
        ys = [next((e["rows_per_s"] or 0 for e in r["engines"]
                    if e["engine"] == name and e.get("agrees") is not False), 0) for r in records]
        ax.bar(x + i * width, ys, width, label=name)
    ax.set_xticks(x + width * (len(names) - 1) / 2, labels or [r["scenario"] for r in records], rotation=15)
    ax.set(ylabel="input rows per second (median)", title=title, yscale="log")
    ax.legend(fontsize="small")
    return save(fig, path)
