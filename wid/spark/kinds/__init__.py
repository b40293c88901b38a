"""Each window kind on the driver, and their registry, keyed by the kind's
shape (`wid.spec.kinds`): adding a kind is its module here and one line below."""

from __future__ import annotations

from wid.spark.kinds.base import KindPlan
from wid.spark.kinds.landmark import LandmarkPlan
from wid.spark.kinds.ranked import CountPlan, RollingPlan
from wid.spark.kinds.session import SessionPlan
from wid.spark.kinds.time import HoppingPlan, TumblingPlan
from wid.spec.kinds import Shape
from wid.spec.window import Window

PLANS: dict[type[Shape], KindPlan] = {k.shape: k for k in (
    TumblingPlan(), HoppingPlan(), SessionPlan(), CountPlan(), RollingPlan(), LandmarkPlan())}


def plan_of(w: Window) -> KindPlan:
    """The driver's part of `w`'s kind."""
    return PLANS[type(w.shape)]


__all__ = ["PLANS", "KindPlan", "plan_of"]
