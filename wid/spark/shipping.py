"""Shipping wid's executor-side modules with the job.

The functions that `mapInArrow` and `transformWithStateInPandas` run on
executors live in modules that import only numpy, pyarrow, pandas and the
standard library. Registering them with cloudpickle *by value* sends their
code along with each function, so executors need those libraries (PySpark's
own Arrow requirements) but not wid itself.
"""

from __future__ import annotations

from types import ModuleType

from pyspark import cloudpickle


def ship(*modules: ModuleType) -> None:
    """Pickle `modules` by value in every function Spark sends to executors."""
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


__all__ = ["ship"]
