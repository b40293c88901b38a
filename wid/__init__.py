"""wid: window aggregates for Apache Spark, with the WID paper's semantics.

    from wid import Window, Aggregation, aggregate

`Window` and `Aggregation` are pure specs; `aggregate` (and `window_result`)
import PySpark on first use, so the specs load without Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wid.errors import ConfigError, MissingDependencyError, StateCapError, WidError
from wid.spec import Aggregation, Punctuation, Window

if TYPE_CHECKING:
    from wid.spark.batch import aggregate, window_result

__all__ = ["Aggregation", "ConfigError", "MissingDependencyError", "Punctuation", "StateCapError",
           "Window", "WidError", "aggregate", "window_result"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("aggregate", "window_result"):
        from wid.spark import batch

        return getattr(batch, name)
    raise AttributeError(f"module 'wid' has no attribute {name!r}")
