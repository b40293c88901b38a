"""TOML load and dump for windows and pipelines (docs/semantics.md#pipelines).

Layout (field names follow the ematix-flow windowing design)::

    name = "flights-hourly"

    [source]
    format = "csv"
    path = "data/flights.csv"

    [transform]
    sql = "SELECT *, ... AS dep_ts FROM source"

    [transform.window]
    kind = "tumbling"
    duration_ms = 3600000
    event_time_column = "dep_ts"
    group_by = ["origin"]

    [[transform.window.aggregations]]
    agg = "count"
    as = "departures"

    [target]
    kind = "sqlite"
    path = "flights.sqlite"
    table = "hourly"

    [dead_letter]
    kind = "sqlite"
    path = "flights.sqlite"
    table = "dead_letter"

Unknown keys are refused, naming the key. Loading and dumping round-trip:
``loads_window(dumps_window(w)) == w``. Reading uses the standard library's
`tomllib`; writing uses `tomli_w`.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import tomli_w

from wid.errors import ConfigError
from wid.spec.aggregation import Aggregation
from wid.spec.durations import OFF, written_field
from wid.spec.join import ColumnMetric, JoinStage, WindowJoin
from wid.spec.parameters import known_names
from wid.spec.pipeline import (
    KAFKA_EVENT_TIME,
    JoinPipelineSpec,
    PipelineSpec,
    SinkSpec,
    SourceSpec,
    StreamSpec,
    check_pipeline_name,
    default_sinks,
)
from wid.spec.secrets import mask_url, masked_options
from wid.spec.spark_table import masked_spark
from wid.spec.window import Punctuation, Window

_RENAMES: dict[type, dict[str, str]] = {Aggregation: {"as_": "as"}, ColumnMetric: {"as_": "as"}}


def _keys(cls: type) -> dict[str, str]:
    """TOML key -> dataclass field name, for the init fields of `cls`."""
    renames = _RENAMES.get(cls, {})
    return {renames.get(f.name, f.name): f.name for f in fields(cls) if f.init}


def build(cls: type, table: object, path: str, nested: dict[str, Any] | None = None) -> Any:
    """Construct `cls` from a TOML table, refusing unknown keys and
    re-raising validation errors with the full field path. A ``*_ms`` field
    may come as text under its key without the suffix
    (`wid.spec.durations`); the object keeps what was written (`text_forms`)."""
    if not isinstance(table, dict):
        raise ConfigError(path, f"must be a table, got {table!r}")
    keys = _keys(cls)
    kwargs: dict[str, Any] = {}
    written: list[tuple[str, object]] = []
    for key, value in table.items():
        if key not in keys and f"{key}_ms" in keys:
            for twin in (f"{key}_ms", f"{key}_months"):
                if twin in table:
                    raise ConfigError(f"{path}.{key}", f"is given twice, as {key} and {twin}", "keep one of them")
            name, parsed = written_field(f"{key}_ms", value, f"{path}.{key}")
            kwargs[name] = parsed
            written.append((key, value))
            continue
        _check_key(key, value, list(keys), path)
        kwargs[keys[key]] = value
    kwargs.update(nested or {})
    obj = _made(lambda: cls(**kwargs), path)
    if written:
        object.__setattr__(obj, "text_forms", tuple(written))
    return obj


def _check_key(key: str, value: object, keys: list[str], path: str) -> None:
    """Refuse text in a milliseconds key (it goes under the key without
    ``_ms``) and an unknown key, with the closest of `keys` (and their
    text forms)."""
    if key.endswith("_ms") and key in keys and isinstance(value, str):
        raise ConfigError(f"{path}.{key}", f"must be a whole number of milliseconds, got {value!r}",
                          f'give the text as {key[:-3]} = "{value}"')
    if key not in keys:
        close = difflib.get_close_matches(key, [*keys, *_texts(keys)], n=1)
        raise ConfigError(f"{path}.{key}", "unknown key", f"did you mean '{close[0]}'?" if close else "remove it")


def _made(make: Any, path: str) -> Any:
    """`make()`, its ConfigError or TypeError as a ConfigError at `path`."""
    try:
        return make()
    except ConfigError as err:
        raise err.at(path) from None
    except TypeError as err:
        raise ConfigError(path, str(err)) from None


def _texts(keys: Iterable[str]) -> list[str]:
    """The keys without ``_ms`` that take a duration or instant as text."""
    return [k[:-3] for k in keys if k.endswith("_ms")]


def _dump(obj: Any) -> dict[str, Any]:
    """A dataclass as a TOML table, leaving out fields at their default."""
    renames = _RENAMES.get(type(obj), {})
    out: dict[str, Any] = {}
    for f in fields(obj):
        if not f.init or not f.compare:
            continue
        value = getattr(obj, f.name)
        default = f.default if f.default is not MISSING else (
            f.default_factory() if f.default_factory is not MISSING else MISSING)
        if value is None and default not in (None, MISSING) and f.name.endswith("_ms"):
            out[f.name[:-3]] = OFF  # a guard turned off: max_future = "off"
            continue
        if value == default or value is None:
            continue
        out[renames.get(f.name, f.name)] = list(value) if isinstance(value, tuple) else value
    for key, text in getattr(obj, "text_forms", ()):  # as the TOML wrote it: duration = "1 hour"
        out.pop(f"{key}_ms", None)
        out.pop(f"{key}_months", None)
        out[key] = text
    return out


# -- windows ---------------------------------------------------------------

def window_from_table(table: object, path: str = "transform.window") -> Window:
    """Build a `Window` from the ``[transform.window]`` table."""
    if not isinstance(table, dict):
        raise ConfigError(path, "must be a table")
    table = dict(table)
    raw_aggs = table.pop("aggregations", [])
    if not isinstance(raw_aggs, list):
        raise ConfigError(f"{path}.aggregations", "must be an array of tables ([[...aggregations]])")
    aggs = tuple(build(Aggregation, a, f"{path}.aggregations[{i}]") for i, a in enumerate(raw_aggs))
    nested: dict[str, Any] = {"aggregations": aggs}
    if "punctuation" in table:
        nested["punctuation"] = build(Punctuation, table.pop("punctuation"), f"{path}.punctuation")
    known = [k for k in known_names() if k != "shape"]
    for key, value in table.items():
        _check_key(key, value, known, path)
    window: Window = _made(lambda: Window(**table, **nested), path)
    return window


def window_to_table(window: Window) -> dict[str, Any]:
    """The ``[transform.window]`` table of `window` (defaults left out): its
    shape's table (``kind`` and the kind's parameters), then the rest."""
    table = {**window.shape.table(), **_dump(window)}
    table.pop("shape", None)
    table.pop("aggregations", None)
    table.pop("punctuation", None)
    if window.punctuation is not None:
        table["punctuation"] = _dump(window.punctuation)
    table["aggregations"] = [_dump(a) for a in window.aggregations]
    return table


def dumps_window(window: Window) -> str:
    """`window` as TOML text with a ``[transform.window]`` header."""
    return tomli_w.dumps({"transform": {"window": window_to_table(window)}})


def loads_window(text: str) -> Window:
    """Parse TOML text holding a ``[transform.window]`` table."""
    doc = _parse(text)
    transform = doc.get("transform")
    if not isinstance(transform, dict) or "window" not in transform:
        raise ConfigError("transform.window", "missing", "add a [transform.window] table")
    return window_from_table(transform["window"])


# -- window joins ----------------------------------------------------------

_STAGE_KEYS = ("left", "right", "left_sql", "right_sql")


def join_from_table(table: object, path: str = "join") -> JoinStage:
    """Build a `JoinStage` from the ``[join]`` table: the stage keys (`left`,
    `right`, `left_sql`, `right_sql`), the `WindowJoin` fields, and
    ``[[join.metrics]]`` (with `agg`: an Aggregation; without: a ColumnMetric)."""
    if not isinstance(table, dict):
        raise ConfigError(path, "must be a table")
    table = dict(table)
    stage = {k: table.pop(k) for k in _STAGE_KEYS if k in table}
    raw = table.pop("metrics", [])
    if not isinstance(raw, list):
        raise ConfigError(f"{path}.metrics", "must be an array of tables ([[join.metrics]])")
    metrics = tuple(build(Aggregation if isinstance(m, dict) and "agg" in m else ColumnMetric, m, f"{path}.metrics[{i}]")
                    for i, m in enumerate(raw))
    join = build(WindowJoin, table, path, {"metrics": metrics})
    return build(JoinStage, stage, path, {"join": join})  # type: ignore[no-any-return]


def join_to_table(stage: JoinStage) -> dict[str, Any]:
    """The ``[join]`` table of `stage` (defaults left out)."""
    table = {k: v for k, v in _dump(stage).items() if k != "join"}
    j = stage.join
    body = _dump(j)
    left, right = j.matching_column
    body["matching_column"] = list(left) if left == right else [list(left), list(right)]
    if j.time_column is not None:
        body["time_column"] = j.left_time if j.left_time == j.right_time else list(j.time_column)
    body["metrics"] = [_dump(m) for m in j.metrics]
    return {**table, **body}


# -- pipelines -------------------------------------------------------------

_PIPELINE_KEYS = ("name", "source", "transform", "target", "dead_letter", "spark", "stream", "join")


def loads_pipeline(text: str, base_dir: str = ".") -> PipelineSpec | JoinPipelineSpec:
    """Parse a pipeline TOML document: a window pipeline, or a window-join
    pipeline when it has a ``[join]`` table. Raises ConfigError naming the field."""
    doc = _parse(text)
    for key in doc:
        if key not in _PIPELINE_KEYS:
            close = difflib.get_close_matches(key, _PIPELINE_KEYS, n=1)
            raise ConfigError(key, "unknown top-level key",
                              f"did you mean '{close[0]}'?" if close else "remove it")
    name = doc.get("name")
    if name is None:
        raise ConfigError("name", "missing", 'add name = "my-pipeline" at the top')
    check_pipeline_name(name)  # before the sinks made from it, and the rest
    if "source" not in doc:
        raise ConfigError("source", "missing", "add a [source] table")
    tables = doc["source"] if isinstance(doc["source"], list) else [doc["source"]]
    if not tables:
        raise ConfigError("source", "missing", "add a [source] table")
    source, *more = [build(SourceSpec, t, f"source[{i}]" if len(tables) > 1 else "source")
                     for i, t in enumerate(tables)]
    target, dead = default_sinks(name, build(SinkSpec, doc["target"], "target") if "target" in doc else None,
                                 build(SinkSpec, doc["dead_letter"], "dead_letter") if "dead_letter" in doc else None)
    spark = doc.get("spark", {})
    if not isinstance(spark, dict):
        raise ConfigError("spark", "must be a table")
    stream = build(StreamSpec, doc["stream"], "stream") if "stream" in doc else StreamSpec()
    if "join" in doc:
        if "transform" in doc:
            raise ConfigError("transform", "a join pipeline has none: each side is prepared by "
                              "join.left_sql / join.right_sql", "remove [transform]")
        return JoinPipelineSpec(name=name, source=source, join=join_from_table(doc["join"]), target=target,
                                dead_letter=dead, more_sources=tuple(more), spark=spark, stream=stream,
                                base_dir=base_dir)
    transform = doc.get("transform", {})
    if not isinstance(transform, dict):
        raise ConfigError("transform", "must be a table")
    unknown = set(transform) - {"sql", "window"}
    if unknown:
        raise ConfigError(f"transform.{sorted(unknown)[0]}", "unknown key", "use sql or window")
    if "window" not in transform:
        raise ConfigError("transform.window", "missing", "add a [transform.window] table (or a [join] table)")
    window = window_from_table(kafka_event_time(transform["window"], (source, *more)))
    return PipelineSpec(name=name, source=source, window=window, target=target, dead_letter=dead,
                        transform_sql=transform.get("sql"), spark=spark, stream=stream, more_sources=tuple(more),
                        base_dir=base_dir)


def kafka_event_time(table: object, sources: tuple[SourceSpec, ...]) -> object:
    """The window table with ``event_time_column = "_event_ts"`` (the Kafka
    message timestamp) when every source is Kafka and it names no event
    time column of its own (in event time)."""
    if (isinstance(table, dict) and "event_time_column" not in table and table.get("time_mode", "event") == "event"
            and all(s.format == "kafka" for s in sources)):
        return {**table, "event_time_column": KAFKA_EVENT_TIME}
    return table


def load_pipeline(path: str | Path) -> PipelineSpec | JoinPipelineSpec:
    """Read a pipeline TOML file; relative paths in it resolve against its directory."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(path), "no such pipeline file", "check the path")
    return loads_pipeline(p.read_text(encoding="utf-8"), base_dir=str(p.resolve().parent))


def dumps_pipeline(spec: PipelineSpec | JoinPipelineSpec) -> str:
    """`spec` as TOML text that `loads_pipeline` reads back to an equal
    spec, but for the secrets written inline, dumped as ``***`` so that a
    dump holds no secret (`wid.spec.secrets`): a password in a sink's `url`,
    the value of a secret option (`wid.spec.secrets.is_secret`) in
    `options` or ``[spark] conf``, a token in ``[spark] remote``. Those do
    not round-trip; `url_env`, `password_env` and `options_env` do (they
    hold variable names)."""
    sources = [_dump_masked(s) for s in spec.sources]
    doc: dict[str, Any] = {"name": spec.name, "source": sources if spec.more_sources else sources[0]}
    if isinstance(spec, JoinPipelineSpec):
        doc["join"] = join_to_table(spec.join)
    else:
        transform: dict[str, Any] = {}
        if spec.transform_sql is not None:
            transform["sql"] = spec.transform_sql
        transform["window"] = window_to_table(spec.window)
        doc["transform"] = transform
    doc.update({"target": _dump_masked(spec.target), "dead_letter": _dump_masked(spec.dead_letter)})
    if spec.spark:
        doc["spark"] = masked_spark(spec.spark)
    if spec.stream != StreamSpec():
        doc["stream"] = _dump(spec.stream)
    return tomli_w.dumps(doc)


def _dump_masked(spec: SourceSpec | SinkSpec) -> dict[str, Any]:
    """A source's or sink's table, its secrets as ``***``: a dump never
    holds one (keep it in `password_env`, `url_env` or `options_env`, which
    dump as the variables' names)."""
    table = _dump(spec)
    if "url" in table:
        table["url"] = mask_url(table["url"])
    if "options" in table:
        table["options"] = masked_options(table["options"])
    return table


def _parse(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError("toml", f"not valid TOML: {err}") from None
