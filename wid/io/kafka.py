"""Kafka: Spark's connector, the Kafka source, and the Kafka sinks (window
rows, dead letters).

**The connector.** Spark reads and writes Kafka through its
``spark-sql-kafka-0-10`` connector, which pyspark does not ship: a pipeline
that names Kafka gets it through ``spark.jars.packages`` (Ivy fetches it
and ``kafka-clients`` once, into ``~/.ivy2.5.2``) unless its ``[spark.conf]``
already names it in ``spark.jars.packages`` or ``spark.jars``.

**The source** (`read_kafka`): the message value decoded as JSON with the
source's `schema` (a message that is not JSON, not UTF-8, holds a value of
the wrong type, or has no value is a malformed record, rejected to the
dead letter), plus the message's own columns:

- ``_event_ts`` (TIMESTAMP): the Kafka message timestamp, the event time
  unless the window names a payload column;
- ``_topic``, ``_partition``, ``_offset``: where the message is; with
  ``_topic`` and ``_partition`` on the WID operator every partition keeps
  its own watermark (docs/semantics.md#completeness);
- ``_key``, ``_value`` (BINARY): the message's bytes, so that a rejected
  or late message reaches a dead-letter topic as it arrived.

**The sinks** (`write_messages`): a window row is one message keyed by its
natural key (JSON), the row as JSON for value, so a compacted topic keeps
each window's latest value; a retracted session window is a tombstone (its
key, no value). A dead letter is the original message's key and value bytes
(a row from a file: no key, its JSON), with the reason, source, topic,
partition, offset and batch id in headers, after Kafka Connect's
dead-letter queues. Spark's Kafka writer is at-least-once; wid makes a
replayed micro-batch (the one a crash interrupted) skip the messages it
finds already written for that batch (`wid.id` header), so that a topic
holds each message once (`unwritten`), but for a task Spark retried
inside a micro-batch. A sink with ``delivery = "exactly-once"`` writes in
Kafka transactions instead (`wid.io.kafka_eos`), with the same messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from wid.io import kafka_eos
from wid.io.batch import Batch
from wid.spec.delivery import EXACTLY_ONCE
from wid.spec.pipeline import (
    CORRUPT,
    KAFKA_EVENT_TIME,
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    KAFKA_VALUE,
    JoinPipelineSpec,
    PipelineSpec,
    SinkSpec,
    SourceSpec,
)
from wid.spec.sql_text import ident
from wid.spec.time_text import JSON_OPTIONS, ROW_JSON_OPTIONS

CONNECTOR = "org.apache.spark:spark-sql-kafka-0-10_2.13"
# The connector release each Spark line runs (tested in CI). Maven Central
# does not carry every release's connector with its dependencies: pyspark
# reaches PyPI without its jars (4.3.0), and most patch releases' connectors
# lack their spark-token-provider-kafka jar, so Ivy cannot resolve them. The
# release named here resolves, and a connector runs on every patch release
# of its line; a line newer than every listed one runs the newest listed
# line's connector (4.3 on 4.2's); an older line's Spark cannot run a newer
# line's connector (4.2's fails on 4.1 with NoSuchMethodError). 4.1.1's stops
# the first restart after a crash inside a micro-batch with a
# NullPointerException once the replayed batch is committed (SPARK-57438:
# fixed in 4.1.3's, whose token-provider jar Maven Central lacks); the next
# run goes on.
LINE_CONNECTOR = {"4.0": "4.0.0", "4.1": "4.1.1", "4.2": "4.2.0"}
# Jars the connector depends on that pyspark already ships: left out of Ivy's resolution.
SHIPPED = ("org.apache.hadoop:hadoop-client-runtime", "org.apache.hadoop:hadoop-client-api",
           "org.xerial.snappy:snappy-java", "at.yawk.lz4:lz4-java", "org.lz4:lz4-java", "org.slf4j:slf4j-api",
           "com.google.code.findbugs:jsr305", "org.scala-lang.modules:scala-parallel-collections_2.13")

OFFSET, KEY = "_offset", "_key"
EVENT_TS, TOPIC, PARTITION, VALUE = KAFKA_EVENT_TIME, KAFKA_TOPIC, KAFKA_PARTITION, KAFKA_VALUE
METADATA = (EVENT_TS, TOPIC, PARTITION, OFFSET, KEY, VALUE)
PIPELINE_HEADER, BATCH_HEADER, ID_HEADER = "wid.pipeline", "wid.batch_id", "wid.id"


def _release(version: str) -> tuple[int, ...]:
    """``"4.1.4"`` as ``(4, 1, 4)``; a suffix (``"4.2.0.dev1"``) is left out."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def connector_release(spark_version: str) -> str:
    """The connector release that runs on `spark_version` (`LINE_CONNECTOR`):
    its line's, the newest line's past every listed line, else itself."""
    release = _release(spark_version)
    newest = max(LINE_CONNECTOR.values(), key=_release)
    if release[:2] > _release(newest)[:2]:
        return newest
    return LINE_CONNECTOR.get(".".join(map(str, release[:2])), spark_version)


def connector(spark_version: str) -> str:
    """The Maven coordinates of the Kafka connector for `spark_version`."""
    return f"{CONNECTOR}:{connector_release(spark_version)}"


def uses_kafka(spec: PipelineSpec | JoinPipelineSpec) -> bool:
    """Whether a source, the target or the dead letter is Kafka."""
    return any(s.format == "kafka" for s in spec.sources) or "kafka" in (spec.target.kind, spec.dead_letter.kind)


def with_connector(conf: Mapping[str, Any], spark_version: str) -> dict[str, Any]:
    """`conf` with the Kafka connector in ``spark.jars.packages`` (and the
    jars pyspark ships in ``spark.jars.excludes``), unless `conf` already
    names it in ``spark.jars.packages`` or ``spark.jars``."""
    out = dict(conf)
    packages = str(out.get("spark.jars.packages", ""))
    if "spark-sql-kafka" in packages or "spark-sql-kafka" in str(out.get("spark.jars", "")):
        return out
    out["spark.jars.packages"] = ",".join(p for p in (packages, connector(spark_version)) if p)
    out.setdefault("spark.jars.excludes", ",".join(SHIPPED))
    return out


# -- the source --------------------------------------------------------------

def reader_options(spec: SourceSpec) -> dict[str, str]:
    """Spark's Kafka reader options for `spec`: the subscription, the
    brokers, ``startingOffsets = earliest`` (a new pipeline reads its topic
    from the start, as a batch run over it would), then `spec.options` and
    `spec.options_env`'s variables, read in this process (the one building
    the reader: the driver, or the Spark Connect client). Raises ConfigError
    naming a variable that is not set, its option and this process."""
    options = {"startingOffsets": "earliest"}
    if spec.topic is not None:
        options["subscribe"] = spec.topic
    elif spec.topics:
        options["subscribe"] = ",".join(spec.topics)
    elif spec.pattern is not None:
        options["subscribePattern"] = spec.pattern
    if spec.bootstrap_servers is not None:
        options["kafka.bootstrap.servers"] = spec.bootstrap_servers
    return {**options, **spec.spark_options()}


def decoded(raw: DataFrame, schema: str | None, zone: str | None = None) -> DataFrame:
    """Spark's Kafka rows (``key``, ``value``, ``topic``, ``partition``,
    ``offset``, ``timestamp``) as the source's rows: the JSON payload's
    columns by `schema` (none without one), `CORRUPT` (the value's text, or
    ``""`` for a message without value, when it does not decode), then
    `METADATA`. A value is judged on its bytes: one that is not UTF-8 does
    not decode, even where Spark's JSON parser would read it with U+FFFD for
    the bad bytes (a valid U+FFFD is data). A text time `schema` reads as a
    TIMESTAMP without an offset is read in `zone`, else UTC
    (`wid.io.sources.read_source`)."""
    meta = [F.col("timestamp").alias(EVENT_TS), F.col("topic").alias(TOPIC), F.col("partition").alias(PARTITION),
            F.col("offset").alias(OFFSET), F.col("key").alias(KEY), F.col("value").alias(VALUE)]
    if schema is None:
        return raw.select(*meta)
    text = F.col("value").cast("string")  # the bytes as they are: Spark's cast decodes nothing
    parsed = F.from_json(text, f"{schema}, {CORRUPT} STRING",
                         {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, "timeZone": zone or "UTC"})
    payload = "_wid_payload"
    as_text = f"CAST({ident(VALUE)} AS STRING)"
    not_utf8 = F.when(~F.expr(f"is_valid_utf8({as_text})"), F.expr(f"make_valid_utf8({as_text})"))
    undecoded = F.coalesce(F.col(CORRUPT), F.when(F.col(VALUE).isNull(), F.lit("")), not_utf8)
    return (raw.select(parsed.alias(payload), *meta).select(f"{payload}.*", *METADATA)
            .withColumn(CORRUPT, undecoded))


def read_kafka(spark: SparkSession, spec: SourceSpec, zone: str | None = None) -> DataFrame:
    """The Kafka source `spec` as a streaming DataFrame (see the module
    docstring for its columns; `decoded` for `zone`)."""
    raw = spark.readStream.format("kafka").options(**reader_options(spec)).load()
    return decoded(raw, spec.schema, zone)


# -- the sinks ---------------------------------------------------------------

def _header(name: str, value: Column) -> Column:
    return F.struct(F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value"))


def window_messages(rows: DataFrame, key: Sequence[str], batch: Batch) -> DataFrame:
    """Window rows as messages: key the natural key as JSON, value the row as JSON."""
    value = F.to_json(F.struct(*rows.columns), ROW_JSON_OPTIONS)
    return _messages(rows, F.to_json(F.struct(*key), JSON_OPTIONS), value, [], batch)


def tombstones(keys: DataFrame, batch: Batch) -> DataFrame:
    """Retracted natural keys as tombstones (a compacted topic forgets them)."""
    return _messages(keys, F.to_json(F.struct(*keys.columns), JSON_OPTIONS), F.lit(None).cast("string"), [], batch)


def dead_letter_messages(dead: DataFrame, batch: Batch) -> DataFrame:
    """Dead letters (reason, source, source_file, row_json) as messages: a
    Kafka row's own key and value bytes (kept in its `row_json` as
    ``_key``/``_value``, base64), any other row's JSON as value, with
    headers ``wid.reason``, ``wid.source``, ``wid.source_file``,
    ``wid.topic``, ``wid.partition``, ``wid.offset``."""
    def field(name: str) -> Column:
        return F.get_json_object(F.col("row_json"), f"$.{name}")
    key = F.unbase64(field(KEY))
    from_kafka = field(TOPIC).isNotNull()  # a Kafka message: its own value, a tombstone's none
    value = F.when(from_kafka, F.unbase64(field(VALUE))).otherwise(F.col("row_json").cast("binary"))
    headers = [_header("wid.reason", F.col("reason")), _header("wid.source", F.col("source")),
               _header("wid.source_file", F.col("source_file")), _header("wid.topic", field(TOPIC)),
               _header("wid.partition", field(PARTITION)), _header("wid.offset", field(OFFSET))]
    return _messages(dead, key, value, headers, batch)


def _messages(rows: DataFrame, key: Column, value: Column, headers: list[Column], batch: Batch) -> DataFrame:
    """(key, value, headers): `headers`, then the pipeline, the batch id
    (when there is one) and ``wid.id``, a digest of the message (key, value, `headers`) that
    `unwritten` matches on."""
    digest = F.sha2(F.to_json(F.struct(key.cast("binary").alias("k"), value.cast("binary").alias("v"),
                                       F.array(*headers).alias("h")), {"ignoreNullFields": "false"}), 256)
    return rows.select(key.cast("binary").alias("key"), value.cast("binary").alias("value"),
                       F.array(*headers, _header(PIPELINE_HEADER, F.lit(batch.pipeline)),
                               *([] if batch.batch_id is None else [_header(BATCH_HEADER, F.lit(str(batch.batch_id)))]),
                               _header(ID_HEADER, digest)).alias("headers"))


def writer_options(sink: SinkSpec) -> dict[str, str]:
    """Spark's Kafka writer options for `sink`: its topic and brokers, then
    `sink.options` and `sink.options_env`'s variables, read in this process
    (the one running the writer: a stream's foreachBatch runs on the Spark
    Connect server under Spark Connect, else in the driver). Raises
    ConfigError naming a variable that is not set, its option and this
    process."""
    options = {"topic": sink.topic or ""}
    if sink.bootstrap_servers is not None:
        options["kafka.bootstrap.servers"] = sink.bootstrap_servers
    return {**options, **sink.spark_options()}


def unwritten(messages: DataFrame, sink: SinkSpec, batch: Batch) -> DataFrame:
    """`messages` less those already in `sink`'s topic for this pipeline and
    micro-batch (written before a crash interrupted it), read back from the
    messages produced since `batch.replay_since_ms`; all of them when the
    batch is no replay."""
    if batch.replay_since_ms is None:
        return messages
    written = _produced_since(messages.sparkSession, sink, batch.replay_since_ms)
    ids = written.select(_header_value(F.col("headers"), ID_HEADER).alias("id")).where(
        (_header_value(F.col("headers"), PIPELINE_HEADER) == batch.pipeline)
        & (_header_value(F.col("headers"), BATCH_HEADER) == str(batch.batch_id)))
    mine = messages.withColumn("_wid_id", _header_value(F.col("headers"), ID_HEADER))
    return mine.join(ids, mine["_wid_id"] == ids["id"], "left_anti").drop("_wid_id")


def refused_counts(spark: SparkSession, sink: SinkSpec, pipeline: str, since_ms: int) -> dict[int, int]:
    """Dead letters of rows a target refused (``wid.source`` ``target``),
    per micro-batch id, among `pipeline`'s messages in `sink`'s topic
    produced since `since_ms` (epoch ms)."""
    messages = _produced_since(spark, sink, since_ms)
    headers = F.col("headers")
    refused = messages.where((_header_value(headers, PIPELINE_HEADER) == pipeline)
                             & (_header_value(headers, "wid.source") == "target"))
    found = refused.groupBy(_header_value(headers, BATCH_HEADER).alias("batch_id")).count().collect()
    return {int(b): int(n) for b, n in found}


def _produced_since(spark: SparkSession, sink: SinkSpec, since_ms: int) -> DataFrame:
    """The messages of `sink`'s topic produced since `since_ms` (epoch ms),
    with their headers; of an exactly-once sink, those of committed
    transactions only (``read_committed``). The topic is subscribed by a
    pattern, not by its name: a topic never created (nothing written yet)
    then reads as empty instead of failing."""
    options = {k: v for k, v in writer_options(sink).items() if k != "topic"}
    if sink.delivery == EXACTLY_ONCE:
        options["kafka.isolation.level"] = "read_committed"
    return (spark.read.format("kafka").options(**options).option("subscribePattern", re.escape(sink.topic or ""))
            .option("includeHeaders", "true").option("startingTimestamp", str(since_ms))
            .option("startingOffsetsByTimestampStrategy", "latest").load())


def _header_value(headers: Column, name: str) -> Column:
    found = F.filter(headers, lambda h: h["key"] == F.lit(name))
    return F.element_at(found, 1)["value"].cast("string")


def send(messages: DataFrame, sink: SinkSpec, batch: Batch, part: str = "target", rows: int | None = None) -> int:
    """Write (key, value, headers) rows to `sink`'s topic as `part`
    (``target``, ``target-delete``, ``dead_letter``); returns how many.
    At least once: with Spark's writer, less those a replayed micro-batch
    already wrote (`unwritten`); `rows`, when the caller knows how many
    `messages` holds, spares the count before a write that is no replay
    (a Spark job per micro-batch). Exactly once: in Kafka transactions
    (`wid.io.kafka_eos`)."""
    if sink.delivery == EXACTLY_ONCE:
        return kafka_eos.send(messages, sink, batch, part)
    if rows is not None and batch.replay_since_ms is None:
        if rows:
            messages.write.format("kafka").options(**writer_options(sink)).save()
        return rows
    messages = unwritten(messages, sink, batch).persist()
    try:
        count = messages.count()
        if count:
            messages.write.format("kafka").options(**writer_options(sink)).save()
        return count
    finally:
        messages.unpersist()


__all__ = ["CONNECTOR", "EVENT_TS", "KEY", "METADATA", "OFFSET", "PARTITION", "TOPIC", "VALUE", "connector",
           "connector_release", "dead_letter_messages", "decoded", "read_kafka", "reader_options", "refused_counts",
           "tombstones",
           "send", "unwritten", "uses_kafka", "window_messages", "with_connector", "writer_options"]
