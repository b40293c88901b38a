"""Checking what a pipeline left in its SQLite sinks against the oracles:
landing micro-batches as JSON-lines files (a string is a malformed line),
reading the tables back, the oracle's rows as the sink holds them, and the
dead letters as (reason, row) counted by their occurrences."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.fixtures import stamped
from tests.spark.compare import same_value
from wid.semantics import reasons
from wid.semantics.sink_state import sink_rows
from wid.semantics.stream_oracle import BatchResult, run_stream
from wid.spec import Window

Row = dict[str, Any]


def land(root: Path, batches: Sequence[Sequence[Row | str]]) -> Path:
    """One JSON-lines file per micro-batch, in order of modification time."""
    land_dir = root / "land"
    land_dir.mkdir(parents=True)
    for i, batch in enumerate(batches):
        path = land_dir / f"part-{i:04d}.json"
        path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in batch))
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    return land_dir


def read_table(path: str, table: str) -> list[Row]:
    with closing(sqlite3.connect(path)) as con:
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(f'SELECT * FROM "{table}"')]
        except sqlite3.OperationalError:  # never created: nothing was written
            return []


def iso(us: int) -> str:
    """Epoch microseconds as the SQLite sink writes a timestamp."""
    return datetime.fromtimestamp(us / 1e6, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_sink_row(window: Window, row: Row) -> Row:
    """An oracle output row as the SQLite sink holds it (bounds as ISO text)."""
    bounds = set(window.output_prefix[:2])  # a row window (rolling) has none
    return {c: (iso(v) if c in bounds and v is not None else v) for c, v in row.items()}


def folded(window: Window, results: Iterable[BatchResult], columns: list[str]) -> list[Row]:
    """The oracle's emissions applied in order, as a keyed sink applies them
    (`wid.semantics.sink_state.sink_rows`), as the SQLite sink holds them."""
    return [as_sink_row(window, r) for r in sink_rows(window, results, columns)]


def assert_same_rows(window: Window, got: list[Row], want: list[Row]) -> None:
    aliases = {a.as_ for a in window.aggregations}
    assert len(got) == len(want), f"{len(got)} rows written, the oracle gives {len(want)}:\n{got}\n{want}"
    if not want:
        return
    exact = [c for c in want[0] if c not in aliases]

    def key(r: Row) -> str:
        return json.dumps([bool(r[c]) if c == "is_final" else r[c] for c in exact])
    for g, w in zip(sorted(got, key=key), sorted(want, key=key), strict=True):
        assert key(g) == key(w), f"\n wid    {g}\n oracle {w}"
        for a in window.aggregations:
            assert same_value(a.agg, a.mode, g[a.as_], w[a.as_]), f"{a.as_}:\n wid    {g}\n oracle {w}"


def canonical(text: str) -> str:
    """A dead letter's row as compared: its JSON with sorted keys, or its
    raw text when it is not JSON (a malformed line)."""
    try:
        return json.dumps(json.loads(text), sort_keys=True)
    except json.JSONDecodeError:
        return text


def dead_letters(rows: list[Row]) -> Counter[tuple[str, str]]:
    """(reason, `canonical` row) of each dead-letter row, counted by its
    occurrences."""
    out: Counter[tuple[str, str]] = Counter()
    for r in rows:
        out[r["reason"], canonical(r["row_json"])] += r["occurrences"]
    return out


def expected_dead(rejected: Iterable[tuple[str, Row | str]], columns: Sequence[str]) -> Counter[tuple[str, str]]:
    """(reason, row) counted, as `dead_letters` reads them: a row with every
    input column in `columns`, a malformed line as its text."""
    out: Counter[tuple[str, str]] = Counter()
    for reason, row in rejected:
        text = row if isinstance(row, str) else json.dumps({c: row.get(c) for c in columns})
        out[reason, canonical(text)] += 1
    return out


def rows_of(batch: Sequence[Row | str]) -> list[Row]:
    return [r for r in batch if not isinstance(r, str)]


def malformed(batch: Sequence[Row | str]) -> list[str]:
    return [r for r in batch if isinstance(r, str)]


def stream_outcome(window: Window, batches: Sequence[Sequence[Row | str]], columns: Sequence[str],
                   written: Sequence[str]) -> tuple[list[BatchResult], list[Row], Counter[tuple[str, str]]]:
    """The streaming oracle over landed micro-batches (one source): its
    per-batch results, the rows a keyed sink holds after them (over the
    `written` output columns), and the dead letters: rejected and late rows
    with every input column in `columns`, and malformed lines."""
    results = run_stream(stamped([rows_of(b) for b in batches]), window)
    dead = expected_dead([*[(d.reason, d.row) for o in results for d in o.rejected],
                          *[(d.reason, d.row) for o in results for d in o.late],
                          *[(reasons.MALFORMED, line) for b in batches for line in malformed(b)]], columns)
    return results, folded(window, results, list(written)), dead
