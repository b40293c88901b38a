"""The window kinds, one definition each (`wid.spec.kinds.base.Kind`), and
their registry: adding a kind is its module here and one line below, then
its parts in the engines' registries (docs/architecture.md#window-kinds)."""

from __future__ import annotations

from wid.spec.kinds.base import Kind
from wid.spec.kinds.landmark import Landmark
from wid.spec.kinds.ranked import Count, Rolling
from wid.spec.kinds.session import Session
from wid.spec.kinds.time import Hopping, Tumbling

KINDS: dict[str, Kind] = {k.name: k for k in (Tumbling(), Hopping(), Session(), Count(), Rolling(), Landmark())}
NAMES: tuple[str, ...] = tuple(KINDS)


def kinds_taking(field: str) -> tuple[str, ...]:
    """The kinds whose windows take the kind-specific `field`."""
    return tuple(name for name, kind in KINDS.items() if field in kind.fields)


KIND_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(f for kind in KINDS.values() for f in kind.fields))

__all__ = ["KINDS", "KIND_FIELDS", "NAMES", "Kind", "kinds_taking"]
