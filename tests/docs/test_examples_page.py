"""The examples page lists and explains every example pipeline the
repository ships, and its window join in TOML is the shipped file's."""

from __future__ import annotations

from tests.docs import snippets
from tests.docs.snippets import ROOT

PAGE = ROOT / "docs" / "examples.md"


def test_every_example_pipeline_is_on_the_examples_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    shipped = sorted(p.name for p in (ROOT / "examples").glob("*.toml"))
    assert len(shipped) >= 8
    for name in shipped:
        assert f"| `{name}` |" in text, name  # in the table, with what it computes


def test_the_window_join_block_is_the_shipped_file() -> None:
    block = next(b for b in snippets.blocks(PAGE) if b.lang == "toml" and "[join]" in b.text)
    assert block.text.strip() in (ROOT / "examples" / "flights_weather_join.toml").read_text(encoding="utf-8")
