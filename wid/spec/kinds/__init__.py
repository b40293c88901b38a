"""The window kinds, one shape each (`wid.spec.kinds.base.Shape`), and their
registry by TOML's ``kind`` tag: adding a kind is its module here and one
line below, then its parts in the other layers' registries, each keyed by
its shape class (docs/architecture.md#window-kinds)."""

from __future__ import annotations

import difflib
from typing import Any

from wid.errors import ConfigError
from wid.spec.kinds.base import Shape, field_default, shape_as
from wid.spec.kinds.landmark import LandmarkWindows
from wid.spec.kinds.ranked import CountWindows, RollingWindows
from wid.spec.kinds.session import SessionWindows
from wid.spec.kinds.time import HoppingWindows, TumblingWindows

KINDS: dict[str, type[Shape]] = {s.kind: s for s in (
    TumblingWindows, HoppingWindows, SessionWindows, CountWindows, RollingWindows, LandmarkWindows)}
NAMES: tuple[str, ...] = tuple(KINDS)  # the kinds wid ships; `KINDS` is the registry (a test may add to it)


def shape_of(kind: object) -> type[Shape]:
    """The shape class of `kind` (TOML's tag). Raises ConfigError naming
    ``kind`` for a kind no one registered, with the closest."""
    if isinstance(kind, str) and kind in KINDS:
        return KINDS[kind]
    close = difflib.get_close_matches(str(kind), list(KINDS), n=1)
    raise ConfigError("kind", f"unknown window kind {kind!r}",
                      f"did you mean '{close[0]}'?" if close else "use one of " + ", ".join(KINDS))


def kinds_taking(field: str) -> tuple[str, ...]:
    """The kinds whose shapes take parameter `field`."""
    return tuple(name for name, kind in KINDS.items() if field in kind.fields)


def kind_fields() -> tuple[str, ...]:
    """Every kind's parameters, each once, in registry order."""
    return tuple(dict.fromkeys(f for kind in KINDS.values() for f in kind.fields))


def kind_default(field: str) -> Any:
    """The default of kind parameter `field` (in the first kind taking it)."""
    return field_default(KINDS[kinds_taking(field)[0]], field)


__all__ = ["KINDS", "NAMES", "CountWindows", "HoppingWindows", "LandmarkWindows", "RollingWindows", "SessionWindows",
           "Shape", "TumblingWindows", "kind_default", "kind_fields", "kinds_taking", "shape_as", "shape_of"]
