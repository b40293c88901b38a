"""Every engine that runs a `WindowQuery`, wid first (the reference the
others must agree with).

Peers outside wid's own dependencies are optional: Bytewax and Pathway
come with the ``[bench]`` extra; PyFlink runs in its own environment
(``python -m benchmarks flink-setup``). A peer that is not installed shows
in the table as not run, with the command that installs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.peers.duckdb_peer import duckdb_engine
from benchmarks.peers.spark_peers import spark_window_engine, wid_engine
from benchmarks.query import WindowQuery
from benchmarks.suite import Engine, Run, Unavailable

# name: (module under benchmarks.peers, its factory taking (query, data_dir))
OPTIONAL = {"flink": ("flink", "window_engine"), "bytewax": ("bytewax_peer", "bytewax_engine"),
            "pathway": ("pathway_peer", "pathway_engine")}
DEFAULT = ("wid", "spark window()", "duckdb", "flink", "bytewax", "pathway")
# (engine, window kind): the most input rows it is given. Pathway finds sessions with `pw.iterate`
# (measured: about 40 s per 100k rows on this machine), so larger session runs would take hours.
MAX_ROWS = {("pathway", "session"): 200_000}


def window_engines(spark: Any, q: WindowQuery, data_dir: Path, names: Sequence[str] = DEFAULT,
                   rows: int = 0) -> list[Engine]:
    """The engines `names` for `q` over the `rows` events in `data_dir`
    (an engine over its `MAX_ROWS` reports why it did not run)."""
    made: dict[str, Callable[[], Engine]] = {
        "wid": lambda: wid_engine(spark, q, data_dir),
        "spark window()": lambda: spark_window_engine(spark, q, data_dir),
        "duckdb": lambda: duckdb_engine(q, data_dir),
        **{name: optional(name, q, data_dir) for name in OPTIONAL},
    }
    return [guarded(name, made[name] if rows <= MAX_ROWS.get((name, q.kind), rows) else too_many(name, q))
            for name in names]


def too_many(name: str, q: WindowQuery) -> Callable[[], Engine]:
    def make() -> Engine:
        raise Unavailable(f"{name} runs {q.kind} windows on at most {MAX_ROWS[(name, q.kind)]:,} rows here "
                          "(see benchmarks.peers.all_peers.MAX_ROWS)")
    return make


def optional(name: str, q: WindowQuery, data_dir: Path) -> Callable[[], Engine]:
    module, factory = OPTIONAL[name]
    return lambda: getattr(importlib.import_module(f"benchmarks.peers.{module}"), factory)(q, data_dir)


def guarded(name: str, make: Callable[[], Engine]) -> Engine:
    """`make()`, or an engine reporting why it could not be made."""
    try:
        return make()
    except (Unavailable, ImportError) as why:
        note = f"not run: {why}"
        return Engine(name, lambda _repeats: Run(name, note=note))
