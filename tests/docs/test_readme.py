"""The README: short, its two set-up commands exact, every term it uses in
its glossary, no measurement log, and its ten-row example printing what it
shows, with the rows the oracle computes from the same ten rows."""

from __future__ import annotations

import csv
import re
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.docs import snippets
from tests.docs.snippets import ROOT

README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")
EXAMPLES = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[examples]' && wid run examples/flights_hourly.toml"
TESTS = "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev]' && pytest"


def test_the_readme_is_at_most_250_lines() -> None:
    assert len(TEXT.splitlines()) <= 250


def test_the_two_commands_are_there_exactly_and_ci_runs_the_second() -> None:
    shown = [b.text.strip() for b in snippets.blocks(README) if b.lang == "sh"]
    assert EXAMPLES in shown and TESTS in shown
    assert "Java 17, Maven and the PostgreSQL server binaries must be" in TEXT  # their prerequisites
    assert (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().endswith(TESTS)


def test_the_glossary_defines_the_terms_the_readme_uses() -> None:
    glossary = TEXT.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    defined = {m.lower() for m in re.findall(r"^- \*\*([^*]+)\*\*", glossary, re.M)}
    defined |= {t.strip().lower() for d in list(defined) for t in re.split(r",| and ", d)}
    for term in ("watermark", "dead letter", "natural key", "pane", "punctuation", "extent", "window id",
                 "lateness", "micro-batch", "event time", "wid operator", "oracle", "late-data policy"):
        if term in TEXT.split("## Glossary", 1)[0].lower():
            assert term in defined, term
    assert {"generous", "consistent"} <= {w for d in defined for w in d.split()}


def test_the_readme_holds_no_measurements() -> None:
    prose = re.sub(r"^```.*?^```", "", TEXT, flags=re.M | re.S)  # the example's data has dates; its prose none
    assert "## Ten rows" in prose and "2024-05-01" not in prose
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", prose)
    assert not re.search(r"\d+(\.\d+)? ?(ms|s|µs|minutes|seconds)\b.{0,40}(faster|slower|x\b)", prose)
    assert not re.search(r"\b\d+(\.\d+)?x\b", prose)


def _example() -> tuple[snippets.Block, snippets.Block]:
    found = snippets.blocks(README)
    i = next(i for i, b in enumerate(found) if b.lang == "python")
    assert snippets.is_output(found[i + 1])
    return found[i], found[i + 1]


def _micros(value: Any) -> int:
    return int(value.replace(tzinfo=value.tzinfo or UTC).timestamp() * 1_000_000)


def test_the_ten_row_example_prints_what_it_shows_and_the_oracles_rows(spark: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from wid.semantics import evaluate

    code, output = _example()
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    printed = snippets.run_python(code, namespace)
    assert snippets.same_output(printed, output.text), printed
    rows = [r.asDict() for r in namespace["payments"].collect()]
    assert len(rows) == 10
    window = namespace["every_5_minutes"]
    want = evaluate(rows, window)
    got = [r.asDict() for r in namespace["result"].output.collect()]
    assert sorted((_micros(r["window_start"]), _micros(r["window_end"]), r["shop"], r["payments"], r["total"])
                  for r in got) == sorted(tuple(r.values()) for r in want.rows)
    assert [d.reason for d in want.dead_letter] == [r["reason"] for r in namespace["result"].dead_letter.collect()]


def test_the_pipeline_file_is_the_readmes_and_runs_to_the_same_windows(spark: Any, tmp_path: Path) -> None:
    import wid
    from wid.semantics import evaluate

    block = next(b for b in snippets.blocks(README) if b.lang == "toml" and 'name = "payments"' in b.text)
    shipped = (ROOT / "examples" / "payments.toml").read_text(encoding="utf-8")
    assert block.text.strip() in shipped
    shutil.copy(ROOT / "examples" / "payments.toml", tmp_path)
    shutil.copy(ROOT / "examples" / "payments.csv", tmp_path)
    spec = wid.load_pipeline(tmp_path / "payments.toml")
    report = wid.run_pipeline(spec, spark)
    assert (report.rows_in, report.rows_rejected) == (10, 1)
    with sqlite3.connect(tmp_path / "payments.sqlite") as db:
        got = sorted(db.execute("SELECT window_start, shop, payments, total FROM payments").fetchall())
    with open(tmp_path / "payments.csv", newline="") as f:
        rows = [{"shop": r["shop"], "amount": float(r["amount"]),
                 "ts": datetime.fromisoformat(r["ts"]) if r["ts"] else None} for r in csv.DictReader(f)]
    want = evaluate(rows, spec.window).rows
    assert got == sorted((datetime.fromtimestamp(r["window_start"] / 1e6, UTC)
                          .strftime("%Y-%m-%dT%H:%M:%S.%fZ"), r["shop"], r["payments"], r["total"]) for r in want)
