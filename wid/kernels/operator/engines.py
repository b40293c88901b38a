"""The engine of each window kind in the WID operator, keyed by the kind's
engine shape (`OperatorSpec.shape`, which the kind's driver part builds:
`wid.spark.kinds`; the executor imports no spec): adding a kind is its
engine module and one line below."""

from __future__ import annotations

from collections.abc import Callable

from wid.kernels.operator.count_engine import CountEngine, CountShape
from wid.kernels.operator.landmark_engine import LandmarkEngine, LandmarkShape
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.rolling_engine import RollingEngine, RollingShape
from wid.kernels.operator.session_engine import SessionEngine, SessionShape
from wid.kernels.operator.shard import Engine, Store
from wid.kernels.operator.time_engine import TimeEngine, TimeShape

ENGINES: dict[type, Callable[[OperatorSpec, Store], Engine]] = {
    TimeShape: TimeEngine, SessionShape: SessionEngine, CountShape: CountEngine, RollingShape: RollingEngine,
    LandmarkShape: LandmarkEngine}


def make_engine(spec: OperatorSpec, store: Store) -> Engine:
    """The engine for `spec`'s kind (its shape's), over one shard's `store`.
    Raises ValueError for a shape no engine runs."""
    engine = ENGINES.get(type(spec.shape))
    if engine is None:
        raise ValueError(f"the WID operator runs no window of shape {type(spec.shape).__name__}")
    return engine(spec, store)


__all__ = ["ENGINES", "make_engine"]
