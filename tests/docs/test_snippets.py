"""Every code block of the README and the documentation runs, by the rule in
`tests.docs.snippets`: Python blocks run (and print exactly their Output
block), TOML blocks load through wid's own loader, shell blocks are shown
only, and no other fence is allowed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.docs import snippets
from tests.docs.snippets import ROOT, Block

PAGES = snippets.pages()


def test_every_fence_is_run_or_shown() -> None:
    found = [b for p in PAGES for b in snippets.blocks(p)]
    assert len(found) > 50  # the collector finds the blocks at all
    assert snippets.check_languages(found) == []


def test_an_output_block_follows_a_python_block() -> None:
    for page in PAGES:
        found = snippets.blocks(page)
        for before, block in zip([None, *found], found, strict=False):
            if snippets.is_output(block):
                assert before is not None and before.lang == "python", f"{block.where}: Output after no Python block"


def _needs_spark(found: list[Block]) -> bool:
    return any(b.lang == "python" and ("SparkSession" in b.text or "run_pipeline" in b.text) for b in found)


def _lakehouse_version(block: Block) -> str | None:
    """Delta and Iceberg sinks are refused at load time on a Spark the format
    has no jar for; a block naming one is checked as on a Spark it supports."""
    from wid.spec.lakehouse import package_for

    for fmt in ("iceberg", "delta"):
        if f'kind = "{fmt}"' in block.text:
            return next(v for v in ("4.1.0", "4.0.1") if package_for(fmt, v))
    return None


@pytest.mark.parametrize("page", [p for p in PAGES if any(b.lang in snippets.RUN for b in snippets.blocks(p))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_page_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         request: pytest.FixtureRequest) -> None:
    found = snippets.blocks(page)
    if _needs_spark(found):
        request.getfixturevalue("spark")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    for i, block in enumerate(found):
        if snippets.shipped(block) is not None:
            continue  # a file of the repository, shown: test_a_block_titled_with_a_file_path_is_that_file
        if block.lang == "toml":
            version = _lakehouse_version(block)
            with monkeypatch.context() as m:
                if version:
                    m.setattr("wid.spec.pipeline.installed_spark_version", lambda v=version: v)
                snippets.load_toml(block, tmp_path)
        elif block.lang == "python":
            printed = snippets.run_python(block, namespace)
            nxt = found[i + 1] if i + 1 < len(found) else None
            if nxt is not None and snippets.is_output(nxt):
                assert snippets.same_output(printed, nxt.text), f"{block.where} printed:\n{printed}"


def test_a_block_titled_with_a_file_path_is_that_file() -> None:
    found = [b for p in PAGES for b in snippets.blocks(p) if snippets.shipped(b) is not None]
    assert len(found) >= 3  # the declarative pipelines page shows its example project's files
    for block in found:
        path = snippets.shipped(block)
        assert path is not None and path.is_file(), f"{block.where}: no file {block.attrs['title']}"
        assert block.text == path.read_text(encoding="utf-8"), f"{block.where} differs from {path}"


def test_a_fragment_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    """The TOML rule checks keys: a fragment laid over the base is loaded, not just parsed."""
    from wid.errors import ConfigError

    block = Block(ROOT / "README.md", 1, "toml", {}, '[transform.window]\nkind = "tumbling"\nduraton_ms = 5\n')
    with pytest.raises(ConfigError, match="duraton_ms"):
        snippets.load_toml(block, tmp_path)


def test_a_python_block_that_calls_wid_imports_it() -> None:
    # point 8 of issue 55: getting-started's "same window in Python" called wid.aggregate without `import wid`; it
    # ran here only because an earlier block of the page had imported it, and failed as a reader copied it
    def calls_wid(text: str) -> bool:
        code = "\n".join(line for line in text.splitlines() if not line.startswith(("from ", "import ")))
        return re.search(r"(?<![\w.])wid\.", code) is not None
    missing = [b.where for p in PAGES for b in snippets.blocks(p) if b.lang == "python"
               and calls_wid(b.text) and not re.search(r"^import wid$", b.text, re.M)]
    assert missing == []
