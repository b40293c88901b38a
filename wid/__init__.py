"""wid: window aggregates for Apache Spark, with the WID paper's semantics.

    from wid import Window, Aggregation, aggregate

`Window` and `Aggregation` are pure specs; `aggregate` (and `window_result`)
import PySpark on first use, so the specs load without Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wid.errors import ConfigError, MissingDependencyError, StateCapError, WidError
from wid.spec import Aggregation, Punctuation, Window
from wid.spec.facade import pipeline
from wid.spec.join import ColumnMetric, WindowJoin
from wid.spec.toml_io import dumps_pipeline, load_pipeline, loads_pipeline

if TYPE_CHECKING:
    from wid.spark.compile import aggregate, window_result
    from wid.spark.join import window_join

__all__ = ["Aggregation", "ColumnMetric", "ConfigError", "MissingDependencyError", "Punctuation", "StateCapError",
           "Window", "WidError", "WindowJoin", "aggregate", "dumps_pipeline", "load_pipeline", "loads_pipeline",
           "pipeline", "run_pipeline", "window_join", "window_result"]
__version__ = "0.1.0"


def run_pipeline(spec: Any, spark: Any = None) -> Any:
    """Run a `PipelineSpec` (from `pipeline`, or `load_pipeline`): a batch
    pipeline (or a `JoinPipelineSpec`, a window join) returns `wid.batch_pipeline.RunReport`, a streaming one (its source
    is a stream; a window join of streams too) runs until its trigger stops and returns
    `wid.stream_pipeline.StreamReport`. Starts a Spark session from the
    spec's ``[spark]`` settings unless `spark` is given."""
    from wid import batch_pipeline
    from wid.spec.pipeline import JoinPipelineSpec

    spark = spark or batch_pipeline.session_for(spec)
    if isinstance(spec, JoinPipelineSpec) and not spec.source.is_stream:
        from wid.join_pipeline import run_join

        return run_join(spec, spark)
    if spec.source.is_stream:
        from wid.stream_pipeline import run_stream

        return run_stream(spec, spark)
    return batch_pipeline.run_pipeline(spec, spark)


def __getattr__(name: str) -> Any:
    if name in ("aggregate", "window_result"):
        from wid.spark import compile

        return getattr(compile, name)
    if name == "window_join":
        from wid.spark import join

        return join.window_join
    raise AttributeError(f"module 'wid' has no attribute {name!r}")
