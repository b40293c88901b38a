"""Every install hint names this project's distribution: ``wid`` on the
package index is another project's, so ``pip install 'wid[kafka]'`` would
install someone else's code. The README, the docs, the examples and every
message in wid's code say ``spark-wid[...]`` (point 3 of issue 55: the Kafka
how-to and the exactly-once sink's fix said ``wid[kafka]``)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.snippets import ROOT

# `wid[` not preceded by a name character or `-` (`spark-wid[kafka]` is right): a pip requirement of `wid`
WRONG = re.compile(r"(?<![\w-])wid\[")


def texts() -> list[Path]:
    """What a user reads or runs: the README, the docs, the examples, and wid's code (its messages)."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "examples").glob("*")),
             *sorted((ROOT / "wid").rglob("*.py"))]
    return [p for p in found if p.is_file() and p.suffix in (".md", ".py", ".toml")]


def test_no_install_hint_names_another_project_s_wid() -> None:
    wrong = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in texts()
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if WRONG.search(line)]
    assert wrong == []


def test_the_pattern_tells_the_two_apart() -> None:
    assert WRONG.search("pip install 'wid[kafka]'") and WRONG.search('"wid[postgres]"')
    assert not WRONG.search("pip install 'spark-wid[kafka]'") and not WRONG.search("pip install -e '.[dev]'")
