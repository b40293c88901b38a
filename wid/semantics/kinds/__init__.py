"""Each window kind in the oracles, and their registry, keyed by the kind's
shape (`wid.spec.kinds`): adding a kind is its module here and one line below."""

from __future__ import annotations

from wid.semantics.kinds.base import KindSemantics
from wid.semantics.kinds.landmark import LandmarkSemantics
from wid.semantics.kinds.ranked import CountSemantics, RollingSemantics
from wid.semantics.kinds.session import SessionSemantics
from wid.semantics.kinds.time import HoppingSemantics, TumblingSemantics
from wid.spec.kinds import Shape
from wid.spec.window import Window

SEMANTICS: dict[type[Shape], KindSemantics] = {k.shape: k for k in (
    TumblingSemantics(), HoppingSemantics(), SessionSemantics(), CountSemantics(), RollingSemantics(),
    LandmarkSemantics())}


def semantics_of(w: Window) -> KindSemantics:
    """The oracles' part of `w`'s kind."""
    return SEMANTICS[type(w.shape)]


__all__ = ["SEMANTICS", "KindSemantics", "semantics_of"]
