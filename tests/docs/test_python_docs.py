"""The docs speak Python beside TOML: each window kind on the windows page
has a Python block right after its TOML block, and the `Window` the Python
block builds is the window the TOML block declares."""

from __future__ import annotations

from typing import Any

from tests.docs import snippets
from tests.docs.snippets import ROOT
from wid.spec.kinds import NAMES
from wid.spec.toml_io import loads_window
from wid.spec.window import Window

PAGE = ROOT / "docs" / "concepts" / "windows.md"


def test_each_window_kind_in_python_is_the_window_its_toml_declares() -> None:
    found = snippets.blocks(PAGE)
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    pairs = []
    for toml, python in zip(found, found[1:], strict=False):
        if toml.lang == "toml" and python.lang == "python":
            before = {k: v for k, v in namespace.items() if isinstance(v, Window)}
            snippets.run_python(python, namespace)
            made = [v for k, v in namespace.items() if isinstance(v, Window) and before.get(k) is not v]
            assert len(made) == 1, python.where
            assert made[0] == loads_window(toml.text), python.where
            pairs.append(made[0].kind)
    assert sorted(pairs) == sorted(NAMES)  # every kind, once
