"""The documentation site builds from the repository alone with
``mkdocs build --strict`` (broken links and anchors fail it), its generated
references cover the code they are generated from, and every pointer from
the code into the docs lands on a heading."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.docs.snippets import ROOT
from tools.docs import cli_reference, toml_reference, transcripts, window_reference


def test_the_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    for page in ("index.html", "reference/toml/index.html", "reference/cli/index.html", "reference/window/index.html",
                 "stylesheets/extra.css",
                 "reference/python/index.html", "semantics/examples/index.html", "performance/RESULTS/index.html",
                 "performance/HISTORY/index.html", "concepts/img/session.svg", "performance/results/ematix.png"):
        assert (site / page).is_file(), page
    api = (site / "reference/python/index.html").read_text(encoding="utf-8")
    assert 'id="wid.spec.window.Window"' in api and "late-data policy" in api  # mkdocstrings read the docstring


def test_the_toml_reference_lists_every_field_of_every_spec() -> None:
    page = toml_reference.page()
    for table in toml_reference.TABLES:
        if table.cls is type(None):
            continue
        section = page.split(f"## `{table.header}`", 1)[1].split("\n## ", 1)[0]
        for f in fields(table.cls):
            if f.init and f.compare and f.name not in table.skip:
                key = "as" if f.name == "as_" else f.name
                assert f"| `{key}` |" in section, f"{table.header}: {key}"


def test_the_window_reference_has_every_field_its_unit_default_and_kinds() -> None:
    from wid.spec.kinds import KINDS
    from wid.spec.window import Window

    page = window_reference.page()
    assert "Window(\n    kind: WindowKind,\n" in page and "Window.tumbling(\n" in page
    table = page.split("## Fields", 1)[1]
    for f in fields(Window):
        if f.init:
            row = next(line for line in table.splitlines() if line.startswith(f"| `{f.name}` |"))
            cells = [c.strip() for c in row.strip("|").split(" | ")]
            assert len(cells) == 6 and cells[5], f.name  # a description for every field
            assert (cells[2].startswith(("ms;", "epoch ms;"))) == f.name.endswith("_ms"), f.name
            for name, kind in KINDS.items():
                assert (name in cells[4] or cells[4] == "all") == (f.name in kind.fields or cells[4] == "all"), f.name
    assert "time_mode" in table


def test_reference_tables_never_break_a_key_inside(tmp_path: Path) -> None:
    css = (ROOT / "docs" / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert "td:first-child code" in css and "white-space: nowrap" in css
    assert "stylesheets/extra.css" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_toml_reference_asks_the_loader_which_keys_it_takes() -> None:
    window = next(t for t in toml_reference.TABLES if t.header == "[transform.window]")
    assert toml_reference.accepted(window, "hop_ms")  # a field: known, even where the kind refuses it
    assert not toml_reference.accepted(window, "hop_msec")


def test_the_cli_reference_has_every_command_and_option_help_shows() -> None:
    from wid.cli import app

    page = cli_reference.page()
    top = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    commands = [c["name"] for c in cli_reference.commands()]
    assert {"validate", "run", "explain", "doctor"} <= set(commands)
    for name in commands:
        assert name in top
        assert f"## `wid {name}`" in page
        shown = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "200"}).output
        for option in set(re.findall(r"(--[a-z][a-z-]+)", shown)) - {"--help"}:
            assert f"`{option}" in page.split(f"## `wid {name}`", 1)[1].split("\n## ", 1)[0], (name, option)


def test_the_examples_page_has_every_transcript_and_micro_batch() -> None:
    page = transcripts.page()
    files = sorted(transcripts.HERE.glob("*.toml"))
    assert len(files) >= 20
    for path in files:
        t = transcripts.load(path)
        section = page.split(f"`tests/transcripts/{path.name}`", 1)[1].split("\n### ", 1)[0]
        assert section.count("**Micro-batch ") == len(t["doc"]["batch"]), path.name


def _anchors(page: Path) -> set[str]:
    from markdown.extensions.toc import slugify

    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^#{1,6} (.*?)(?: \{#([\w-]+)\})?\s*$", line)
        if m:
            found.add(m.group(2) or slugify(m.group(1).replace("`", ""), "-"))
    return found


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in listed.splitlines()
            if p.endswith((".py", ".md", ".toml", ".yml", ".txt", ".cfg")) or p.startswith(".ci/")]


def test_every_pointer_into_the_docs_lands() -> None:
    missing = []
    for path in _tracked_text_files():
        if not path.is_file():
            continue
        for m in re.finditer(r"\bdocs/([\w/-]+\.md)(?:#([\w-]+))?", path.read_text(encoding="utf-8")):
            page = ROOT / "docs" / m.group(1)
            if not page.is_file() or (m.group(2) and m.group(2) not in _anchors(page)):
                missing.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert missing == []


def test_nothing_points_outside_the_repository() -> None:
    """The design notes live outside the repository: nothing may cite them."""
    name = "DESIGN" + ".md"
    assert [str(p.relative_to(ROOT)) for p in _tracked_text_files()
            if p.is_file() and name in p.read_text(encoding="utf-8")] == []


@pytest.mark.parametrize("page", ["semantics.md", "architecture.md"])
def test_the_anchors_code_cites_exist(page: str) -> None:
    anchors = _anchors(ROOT / "docs" / page)
    wanted = {"semantics.md": {"time", "window-kinds", "aggregations", "completeness", "real-time-mode",
                               "natural-keys", "pipelines", "window-join"},
              "architecture.md": {"execution-paths", "layout", "batch-plans-in-detail"}}[page]
    assert wanted <= anchors
