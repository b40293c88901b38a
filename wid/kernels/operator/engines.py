"""The engine of each window kind in the WID operator."""

from __future__ import annotations

from wid.kernels.operator.count_engine import CountEngine
from wid.kernels.operator.landmark_engine import LandmarkEngine
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.rolling_engine import RollingEngine
from wid.kernels.operator.session_engine import SessionEngine
from wid.kernels.operator.shard import Engine, Store
from wid.kernels.operator.time_engine import TimeEngine

KINDS = ("tumbling", "hopping", "session", "count", "rolling", "landmark")


def make_engine(spec: OperatorSpec, store: Store) -> Engine:
    """The engine for `spec`'s kind, over one shard's `store`. Raises
    ValueError for a kind the operator does not run."""
    if spec.kind in ("tumbling", "hopping"):
        return TimeEngine(spec, store)
    if spec.kind == "session":
        return SessionEngine(spec, store)
    if spec.kind == "count":
        return CountEngine(spec, store)
    if spec.kind == "rolling":
        return RollingEngine(spec, store)
    if spec.kind == "landmark":
        return LandmarkEngine(spec, store)
    raise ValueError(f"the WID operator does not run kind = '{spec.kind}'")


__all__ = ["KINDS", "make_engine"]
