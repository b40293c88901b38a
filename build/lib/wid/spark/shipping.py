"""Shipping wid's executor-side code with the job.

The functions that `mapInArrow` and `transformWithStateInPandas` run on
executors live in `wid.kernels`, which imports only numpy, pyarrow, pandas,
the standard library and the pure `wid.semantics`. Registering both
packages, whole, with cloudpickle *by value* sends their code along with
each function, so executors need those libraries (PySpark's own Arrow
requirements) but not wid itself.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from pyspark import cloudpickle

import wid.kernels
import wid.semantics


def ship(*modules: ModuleType) -> None:
    """Pickle `wid.kernels`, `wid.semantics` and `modules` by value in every
    function Spark sends to executors."""
    for package in (wid.kernels, wid.semantics):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            cloudpickle.register_pickle_by_value(importlib.import_module(info.name))  # type: ignore[no-untyped-call]
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


__all__ = ["ship"]
