"""The engine of each window kind in the WID operator, by the kind's name
(`wid.spec.kinds`; the executor imports no spec): adding a kind is its
engine module and one line below."""

from __future__ import annotations

from collections.abc import Callable

from wid.kernels.operator.count_engine import CountEngine
from wid.kernels.operator.landmark_engine import LandmarkEngine
from wid.kernels.operator.layout import OperatorSpec
from wid.kernels.operator.rolling_engine import RollingEngine
from wid.kernels.operator.session_engine import SessionEngine
from wid.kernels.operator.shard import Engine, Store
from wid.kernels.operator.time_engine import TimeEngine

ENGINES: dict[str, Callable[[OperatorSpec, Store], Engine]] = {"tumbling": TimeEngine, "hopping": TimeEngine, "session": SessionEngine,
                                    "count": CountEngine, "rolling": RollingEngine, "landmark": LandmarkEngine}
KINDS = tuple(ENGINES)


def make_engine(spec: OperatorSpec, store: Store) -> Engine:
    """The engine for `spec`'s kind, over one shard's `store`. Raises
    ValueError for a kind the operator does not run."""
    if spec.kind not in ENGINES:
        raise ValueError(f"the WID operator does not run kind = '{spec.kind}'")
    return ENGINES[spec.kind](spec, store)


__all__ = ["ENGINES", "KINDS", "make_engine"]
