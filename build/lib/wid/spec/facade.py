"""The Python form of a pipeline: the `pipeline` decorator, mirroring the
TOML form field for field (docs/semantics.md#pipelines).

    @wid.pipeline(name="sensors", source={"format": "json", "path": "land", "stream": True,
                                         "schema": "k STRING, ts LONG, v DOUBLE"},
                  window=Window(kind="tumbling", duration_ms=60_000, ...),
                  target={"kind": "sqlite", "path": "out.sqlite", "table": "windows"})
    def sensors():
        "Per-sensor minute counts."

    wid.run_pipeline(sensors)            # batch or streaming, by its source
    toml_text = wid.dumps_pipeline(sensors)  # the same TOML `wid run` accepts

`source` (one, or a list of several named sources), `target`, `dead_letter`
and `stream` take the spec dataclasses or the TOML tables as dicts; bad fields raise ConfigError naming them, exactly
as loading the TOML would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wid.errors import ConfigError
from wid.spec.join import JoinStage
from wid.spec.pipeline import (
    JoinPipelineSpec,
    PipelineSpec,
    SinkSpec,
    SourceSpec,
    StreamSpec,
    check_pipeline_name,
    default_sinks,
)
from wid.spec.toml_io import build
from wid.spec.window import Window


def _part(cls: type, value: Any, path: str) -> Any:
    return value if isinstance(value, cls) else build(cls, value, path)


SourceArg = SourceSpec | dict[str, Any]


def pipeline(*, name: str, source: SourceArg | list[SourceArg], window: Window | None = None,
             join: JoinStage | None = None, transform_sql: str | None = None,
             target: SinkSpec | dict[str, Any] | None = None, dead_letter: SinkSpec | dict[str, Any] | None = None,
             stream: StreamSpec | dict[str, Any] | None = None, spark: dict[str, Any] | None = None,
             base_dir: str = ".") -> Callable[[Callable[..., Any]], PipelineSpec | JoinPipelineSpec]:
    """Declare a pipeline; the decorated function is replaced by its
    `PipelineSpec` (its body is not run; its docstring documents the
    pipeline), or with `join` (a `wid.spec.join.JoinStage`, the TOML
    ``[join]`` table) instead of `window`, its `JoinPipelineSpec`. Defaults
    follow the TOML: SQLite ``<name>.sqlite`` for results and dead letters,
    the available-now trigger. Raises ConfigError naming the field."""
    check_pipeline_name(name)  # before the sinks made from it, and the rest
    listed = source if isinstance(source, list) else [source]
    first, *more = [_part(SourceSpec, s, f"source[{i}]" if len(listed) > 1 else "source") for i, s in enumerate(listed)]
    sinks = dict(zip(("target", "dead_letter"), default_sinks(
        name, None if target is None else _part(SinkSpec, target, "target"),
        None if dead_letter is None else _part(SinkSpec, dead_letter, "dead_letter")), strict=True))
    spec: PipelineSpec | JoinPipelineSpec
    how = StreamSpec() if stream is None else _part(StreamSpec, stream, "stream")
    if join is not None:
        if window is not None or transform_sql is not None:
            raise ConfigError("join", "a join pipeline takes no window or transform_sql",
                              "prepare each side with the JoinStage's left_sql / right_sql")
        spec = JoinPipelineSpec(name=name, source=first, more_sources=tuple(more), join=join,
                                target=sinks["target"], dead_letter=sinks["dead_letter"], spark=dict(spark or {}),
                                stream=how, base_dir=base_dir)
    elif window is None:
        raise ConfigError("window", "missing", "give window=Window(...), or join=JoinStage(...)")
    else:
        spec = PipelineSpec(
            name=name, source=first, more_sources=tuple(more), window=window, **sinks,
            transform_sql=transform_sql, spark=dict(spark or {}), stream=how, base_dir=base_dir)

    def decorate(_: Callable[..., Any]) -> PipelineSpec | JoinPipelineSpec:
        return spec
    return decorate


__all__ = ["pipeline"]
