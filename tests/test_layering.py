"""DESIGN.md section 9: the pure layers never import pyspark."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_spec_and_semantics_do_not_import_pyspark() -> None:
    files = [*ROOT.glob("wid/spec/**/*.py"), *ROOT.glob("wid/semantics/**/*.py")]
    assert files
    offenders = {str(f.relative_to(ROOT)): m for f in files for m in imported_modules(f)
                 if m == "pyspark" or m.startswith("pyspark.")}
    assert offenders == {}


def test_importing_the_specs_does_not_load_pyspark() -> None:
    code = "import sys, wid, wid.semantics, wid.aggregates.pure; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
