"""wid: window aggregates for Apache Spark, with the WID paper's semantics.

    from wid import Window, Aggregation, aggregate

`Window` and `Aggregation` are pure specs; `aggregate` (and `window_result`)
import PySpark on first use, so the specs load without Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wid.errors import (
    ConfigError,
    InputError,
    MissingDependencyError,
    SetupError,
    StateCapError,
    WidError,
)
from wid.spec import Aggregation, Punctuation, Window
from wid.spec.facade import pipeline
from wid.spec.join import ColumnMetric, WindowJoin
from wid.spec.toml_io import dumps_pipeline, load_pipeline, loads_pipeline

if TYPE_CHECKING:
    from wid.spark.api import aggregate, join_result, window_join, window_result

__all__ = ["Aggregation", "ColumnMetric", "ConfigError", "InputError", "MissingDependencyError", "Punctuation",
           "SetupError", "StateCapError",
           "Window", "WidError", "WindowJoin", "aggregate", "dumps_pipeline", "load_pipeline", "loads_pipeline",
           "join_result", "pipeline", "run_pipeline", "window_join", "window_result"]
__version__ = "0.1.0"


def run_pipeline(spec: Any, spark: Any = None) -> Any:
    """Run a `PipelineSpec` or `JoinPipelineSpec` (from `pipeline`, or
    `load_pipeline`) end to end and return its `wid.pipelines.report.Report`:
    a batch pipeline once; a streaming one (its sources are streams) until
    its trigger stops it. Starts a Spark session from the spec's
    ``[spark]`` settings unless `spark` is given. See
    `wid.pipelines.run.run`."""
    from wid.pipelines.run import run

    return run(spec, spark)


def __getattr__(name: str) -> Any:
    if name in ("aggregate", "join_result", "window_result", "window_join"):
        from wid.spark import api

        return getattr(api, name)
    raise AttributeError(f"module 'wid' has no attribute {name!r}")
