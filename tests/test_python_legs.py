"""The Python legs of CI (`tools.python_legs`): a declared Python the
machine lacks fails its leg, saying so, and never passes it silently; a
Python it has is found, whichever way it is installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tools import python_legs


def test_a_python_the_machine_lacks_fails_its_leg_naming_it(tmp_path: Path) -> None:
    assert python_legs.find_python("3.99") is None
    with pytest.raises(python_legs.LegFailed, match=r"no Python 3\.99 on this machine \(pyenv install 3\.99"):
        python_legs.leg("3.99", tmp_path / "no.whl", tmp_path)


def test_this_python_is_found_by_its_version() -> None:
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = python_legs.find_python(version)
    assert found is not None and python_legs._version_of(str(found)) == version
