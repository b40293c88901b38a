"""The side-by-side harness: each scenario's engines measured the same way,
checked to agree, and reported as medians and ratios to wid.

An `Engine` is a name and a `measure(repeats)` that runs its query once to
warm up (that run's output, as a pandas frame, is what the agreement check
compares) and then `repeats` times, timed, into a sink that forces every
output column. While it warms up, a sampler records the peak resident memory
of this process tree, by kind of process (`PeakRss`); the timed runs go
without it, so that its polling does not take the driver's time.

Where every engine of a scenario runs in this process (`engine`),
`run_scenario` warms them all up first and then times them in turns (one run
of each per round): a JVM warmed by the first engine's runs would otherwise
favour the engines measured after it.

A `Scenario` is a set of engines over the same generated data. `run_scenario`
measures each, compares every engine's output to the first engine's (wid's),
prints the table and returns the record that `benchmarks.__main__` saves. An
engine whose output differs is reported as disagreeing and gets no ratio: no
engine wins by computing less.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

Output = pd.DataFrame
INSTALL = "pip install -e '.[bench]'"  # how to get an optional peer


@dataclass
class Run:
    """One engine's measurement: timed runs (seconds), the warm-up output,
    peak RSS in MiB per kind of process (`PeakRss`), a note (why it did not
    run) and `extra` figures of the engine's own (e.g. its peak state)."""

    engine: str
    runs_s: list[float] = field(default_factory=list)
    output: Output | None = None
    peak_rss_mib: dict[str, float] = field(default_factory=dict)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.runs_s) if self.runs_s else None


@dataclass
class Engine:
    """An engine of a scenario: `measure(repeats)` returns its `Run`."""

    name: str
    measure: Callable[[int], Run]
    run: Callable[[bool], Output | None] | None = None  # in-process: timed in turns with its peers
    extra: Callable[[], dict[str, Any]] | None = None  # the engine's own figures after its runs (`Run.extra`)


@dataclass
class Scenario:
    """Engines over the same data. `rows` (input rows) gives throughput;
    `keys` are the output columns that identify a row (the rest are
    compared as numbers)."""

    name: str
    title: str
    rows: int
    keys: Sequence[str]
    engines: list[Engine]
    params: dict[str, Any] = field(default_factory=dict)


class PeakRss:
    """Samples, every `every_s`, the resident memory of this process tree and
    keeps the peak of three sums, in MiB:

    - ``driver``: this process's growth over its size at the start (an
      in-process peer such as DuckDB, Bytewax or Pathway lives here);
    - ``spark``: the processes that already ran below this one at the start
      (Spark's JVM, driver and executor in one in local mode, and its Python
      workers): a Spark engine's memory;
    - ``new``: processes started during the measurement (PyFlink's Python
      and JVM)."""

    def __init__(self, every_s: float = 0.1) -> None:
        self.every_s, self.peak = every_s, {"driver": 0.0, "spark": 0.0, "new": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> PeakRss:
        import psutil

        self._me = psutil.Process()
        self._base = self._me.memory_info().rss
        self._old = {c.pid for c in self._me.children()}
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            sums = {"driver": max(0, self._me.memory_info().rss - self._base) / 2**20, "spark": 0.0, "new": 0.0}
            for child in self._me.children():
                kind = "spark" if child.pid in self._old else "new"
                sums[kind] += tree_rss(child) / 2**20
            self.peak = {k: max(self.peak[k], v) for k, v in sums.items()}
            self._stop.wait(self.every_s)


def tree_rss(process: Any) -> int:
    """Resident bytes of `process` and its descendants (gone ones count 0)."""
    import psutil

    total = 0
    try:
        for p in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += p.memory_info().rss
    except psutil.Error:
        pass
    return total


def in_turns(engines: Sequence[tuple[str, Callable[[bool], Output | None]]], repeats: int,
             least_s: float = 0.0) -> list[Run]:
    """Measure each ``(name, run)`` in this process: ``run(True)`` is the
    warm-up, under `PeakRss`, and returns the output; then `repeats` rounds
    time ``run(False)`` (everything computed into a sink) of each in turn,
    and further rounds, up to `ROUNDS_UP_TO` times `repeats`, until every
    engine's timed runs add up to `least_s` seconds: a sub-second query's
    median over a few rounds moves by up to 20 % between runs.
    Each round starts one engine later than the one before: an A/A run (one
    engine measured twice, side by side) showed the first of a round
    2-3 % slower than the second, which a fixed order would charge to the
    first engine every round."""
    runs = []
    for name, run in engines:
        with PeakRss() as rss:
            output = run(True)
        runs.append(Run(name, [], output, rss.peak))
    turns = list(zip(engines, runs, strict=True))
    r = 0
    while r < repeats or (r < ROUNDS_UP_TO * repeats and min(sum(m.runs_s) for m in runs) < least_s):
        for (_, run), measured in turns[r % len(turns):] + turns[:r % len(turns)]:
            started = time.perf_counter()
            run(False)
            measured.runs_s.append(time.perf_counter() - started)
        r += 1
    return runs


ROUNDS_UP_TO = 3  # `in_turns` runs at most this many times the rounds asked for


def in_process(name: str, run: Callable[[bool], Output | None], repeats: int) -> Run:
    """Measure `run` alone in this process (`in_turns`)."""
    return in_turns([(name, run)], repeats)[0]


def engine(name: str, run: Callable[[bool], Output | None]) -> Engine:
    """An in-process `Engine` (see `in_process`), timed in turns with its
    peers where they all run in this process."""
    return Engine(name, lambda repeats: in_process(name, run, repeats), run)


def library_engine(name: str, library: str, run: Callable[[bool], Output | None]) -> Engine:
    """An in-process `Engine` of an optional peer `library` (see
    `in_process`): its measure raises `Unavailable`, naming the install
    command, when the library is missing."""
    def measure(repeats: int) -> Run:
        try:
            importlib.import_module(library)
        except ImportError as e:
            raise Unavailable(INSTALL) from e
        return in_process(name, run, repeats)
    return Engine(name, measure)


def canonical(df: Output, keys: Sequence[str]) -> Output:
    """`df` with columns in name order and rows sorted by `keys`, integer
    columns (and numeric keys) as int64, the other numbers as float64 and
    text as it is."""
    df = df[sorted(df.columns)].copy()
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            continue
        whole = c in keys or pd.api.types.is_integer_dtype(df[c])
        df[c] = df[c].astype("int64" if whole else "float64")
    return df.sort_values(list(keys), kind="stable").reset_index(drop=True)


def disagreement(reference: Output, other: Output, keys: Sequence[str]) -> str | None:
    """Why `other` is not the same result as `reference` (None when it is):
    the same columns and rows; keys and integers equal; other numbers
    within a relative 1e-9 (sums in another order round differently)."""
    if sorted(reference.columns) != sorted(other.columns):
        return f"columns {sorted(other.columns)} != {sorted(reference.columns)}"
    if len(reference) != len(other):
        return f"{len(other)} rows != {len(reference)}"
    a, b = canonical(reference, keys), canonical(other, keys)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        same = np.isclose(x, y, rtol=1e-9, atol=1e-9, equal_nan=True) if x.dtype == np.float64 else x == y
        if not np.all(same):
            i = int(np.argmin(same))
            return f"column {c} differs, first at row {i}: {y[i]!r} != {x[i]!r}"
    return None


def checksum(df: Output, keys: Sequence[str]) -> str:
    """A short digest of `df` (canonical form, floats to 6 significant digits)."""
    c = canonical(df, keys)
    for col in c.columns:
        if c[col].dtype == np.float64:
            c[col] = [float(f"{v:.6g}") for v in c[col]]
    return hashlib.sha256(pd.util.hash_pandas_object(c, index=False).to_numpy().tobytes()).hexdigest()[:12]


def run_scenario(s: Scenario, repeats: int, least_s: float = 0.0) -> dict[str, Any]:
    """Measure every engine of `s` (in this process: in turns, see
    `in_turns` for `least_s`), check agreement with the first, print the
    table; returns the record (no outputs, only their checksums)."""
    runs: list[Run] = []
    together = [(e.name, e.run) for e in s.engines if e.run is not None]
    if len(together) == len(s.engines):
        runs = in_turns(together, repeats, least_s)
        for e, r in zip(s.engines, runs, strict=True):
            r.extra = e.extra() if e.extra else {}
    for e in s.engines[len(runs):]:
        try:
            runs.append(e.measure(repeats))
        except Unavailable as why:
            runs.append(Run(e.name, note=f"not run: {why}"))
    reference = runs[0]
    rows = []
    for r in runs:
        why = None if r.output is None or reference.output is None else disagreement(reference.output, r.output, s.keys)
        if why:
            r.note = f"DISAGREES with {reference.engine}: {why}"
        ratio = None if why or r.median_s is None or reference.median_s is None else r.median_s / reference.median_s
        rows.append({"engine": r.engine, "median_s": r.median_s, "runs_s": r.runs_s, "ratio_to_wid": ratio,
                     "rows_per_s": s.rows / r.median_s if r.median_s else None, "peak_rss_mib": r.peak_rss_mib,
                     "output_rows": None if r.output is None else len(r.output),
                     "checksum": None if r.output is None else checksum(r.output, s.keys),
                     "agrees": None if r.output is None else not why, "note": r.note, **r.extra})
    record = {"scenario": s.name, "title": s.title, "rows": s.rows, "params": s.params, "engines": rows}
    print_table(record)
    return record


class Unavailable(RuntimeError):
    """An engine that cannot run here (a peer not installed); the message
    says how to install it."""


def print_table(record: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{record['scenario']}: {record['title']}")
    for col in ("engine", "median s", "x wid", "rows/s", "peak RSS MiB driver+/spark/new", "out rows", "note"):
        t.add_column(col)
    for r in record["engines"]:
        rss = "/".join(f"{r['peak_rss_mib'].get(k, 0):.0f}" for k in ("driver", "spark", "new")) \
            if r["peak_rss_mib"] else ""
        t.add_row(r["engine"], fmt(r["median_s"], ".3f"), fmt(r["ratio_to_wid"], ".2f"),
                  fmt(r["rows_per_s"], ",.0f"), rss, fmt(r["output_rows"], ","), r["note"])
    Console(width=200).print(t)


def fmt(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)
