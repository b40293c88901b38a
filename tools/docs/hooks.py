"""MkDocs hooks (mkdocs.yml ``hooks:``): the pages and pictures the site
generates from the repository when it is built.

Generated, not committed: a generated file in the repository drifts the
moment someone changes a spec field, a CLI option or a transcript without
regenerating it, and a test that catches the drift then fails on their
change, not on ours. Generated at build time, the reference follows the
code by construction, and ``tests/docs/test_site.py`` builds the site with
``--strict`` so a generator that breaks fails the suite.

- ``reference/toml.md``: `tools.docs.toml_reference` (the spec dataclasses);
- ``reference/window.md``: `tools.docs.window_reference` (`Window`'s signature and fields);
- ``reference/cli.md``: `tools.docs.cli_reference` (the typer app);
- ``semantics/examples.md``: `tools.docs.transcripts` (``tests/transcripts``);
- ``concepts/img/<kind>.svg``: `tools.docs.pictures` (wid's window geometry);
- ``performance/RESULTS.md`` and ``performance/HISTORY.md``: ``benchmarks/RESULTS.md``
  and ``benchmarks/HISTORY.md`` as they are, with the plots of
  ``benchmarks/results/`` beside them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mkdocs.structure.files import File, Files  # noqa: E402

from tools.docs import cli_reference, pictures, toml_reference, transcripts, window_reference  # noqa: E402


def generated_pages() -> dict[str, str]:
    """``{path under docs/: Markdown}`` for every generated page."""
    bench = ROOT / "benchmarks"
    return {
        "reference/toml.md": toml_reference.page(),
        "reference/window.md": window_reference.page(),
        "reference/cli.md": cli_reference.page(),
        "semantics/examples.md": transcripts.page(),
        "performance/RESULTS.md": (bench / "RESULTS.md").read_text(encoding="utf-8"),
        "performance/HISTORY.md": (bench / "HISTORY.md").read_text(encoding="utf-8"),
    }


def on_files(files: Files, config: Any) -> Files:
    for path, text in generated_pages().items():
        files.append(File.generated(config, path, content=text))
    for kind, svg in pictures.all_pictures().items():
        files.append(File.generated(config, f"concepts/img/{kind}.svg", content=svg))
    for png in sorted((ROOT / "benchmarks" / "results").glob("*.png")):
        files.append(File.generated(config, f"performance/results/{png.name}", abs_src_path=str(png)))
    return files
