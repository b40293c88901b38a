"""Exactly-once delivery to Kafka (``delivery = "exactly-once"`` on a Kafka
target or dead letter): each micro-batch's messages written in Kafka
transactions, so that a consumer reading with ``isolation.level =
read_committed`` sees every window and every dead letter exactly once,
through any crash, task retry or zombie writer.

**Why not Spark's writer.** Spark's Kafka writer has no transactions: a
task retried inside a micro-batch writes its messages again. Flink's
``KafkaSink`` and Kafka Streams write exactly once with transactions; wid
does the same on Spark with librdkafka's transactional producer
(confluent-kafka, the ``kafka`` extra: a compiled client most users of
Spark's connector never need, so it is not a core dependency), inside
Spark tasks (`wid.io.kafka_txn`).

**Writers.** `send` hash-partitions a micro-batch's messages by key and
value into as many writers as the stream has shuffle partitions
(``spark.sql.shuffle.partitions`` as the checkpoint's offset log holds it,
`wid.io.batch.Batch.writers`: Spark fixes it for the query, whatever the
session says on a restart; so a message lands in the same writer on every
attempt of its micro-batch), and
each writer's task writes its messages in one transaction. Its
``transactional.id`` is ``wid-<pipeline>-<scope>-<part>-<writer>``, where
the scope is a digest of the checkpoint's path and the streaming query's
id (two pipelines, or a checkpoint deleted and started afresh, never share
ids; a batch run gets a new scope each run) and `part` is what is written:
``target``, ``target-delete`` (a session's tombstones) or ``dead_letter``.
A new producer's ``init_transactions`` fences every earlier producer of
its id and aborts the transaction it left open.

**The micro-batch id in the transaction.** Each transaction also commits
an offset, micro-batch id + 1, in a consumer group named as its
transactional id (``send_offsets_to_transaction``, on partition 0 of the
topic: Kafka takes offsets of real partitions only); it is visible if and
only if the transaction committed. A writer that finds its id's offset at
this micro-batch writes nothing: a task retried after its commit, or a
micro-batch replayed after a crash, writes only what had not committed.
Only writers with messages open a transaction; on a replay they are the
same writers, since the micro-batch's messages are the same.

**What the brokers can do to it.**

- A run down longer than the producer's ``transaction.timeout.ms``
  (librdkafka's default 60 s, at most the brokers'
  ``transaction.max.timeout.ms``): the coordinator aborts the open
  transaction; the replay finds no marker and writes it again. Nothing is
  lost. Until then a ``read_committed`` consumer waits at that
  transaction: a restart ends the wait at once (``init_transactions``).
  A writer's transaction must also commit within that time.
- Brokers that cannot host transactions (``transaction.state.log.
  replication.factor`` or ``.min.isr`` above the brokers they have, an ACL
  missing): `check_sinks`, at the first micro-batch, fails with one line
  naming the settings.
- A topic that does not exist, on brokers that do not create topics on
  first use: `check_sinks` fails with one line naming the topic.
- The cost: one transaction (a marker and a commit, a few round trips) per
  micro-batch and writer with messages, and the writer in Python.

**Settings.** The sink's ``kafka.*`` options are librdkafka's settings
without the prefix (most names are the Java client's); a JAAS
configuration (``kafka.sasl.jaas.config``, PLAIN or SCRAM) becomes
``sasl.username`` and ``sasl.password``; a setting librdkafka does not know
is refused with one line naming it. Messages go to the partition Spark's
writer (Java's default partitioner) picks for their key: librdkafka's
``murmur2_random``.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
import uuid
from collections.abc import Mapping
from functools import partial
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wid.errors import ConfigError, SinkError
from wid.io.batch import Batch
from wid.io.kafka_txn import RESULT, WRITER, Transaction, client, write_partition
from wid.spec.delivery import EXACTLY_ONCE
from wid.spec.pipeline import SinkSpec
from wid.spec.secrets import is_secret

PROBE_TIMEOUT_S = 30.0
TOPIC_WAIT_S = 10.0  # how long a topic created on first use may take to appear
PARTS = ("target", "target-delete", "dead_letter")
_JAAS = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_QUIET = logging.getLogger("wid.kafka_eos.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def transactional_prefix(batch: Batch, part: str) -> str:
    """``wid-<pipeline>-<scope>-<part>``: the writers' transactional ids
    (and consumer groups) less their index (module docstring)."""
    if part not in (*PARTS, "probe"):
        raise ValueError(f"part must be one of {PARTS}, got {part!r}")
    scope = uuid.uuid4().hex if batch.checkpoint is None else \
        hashlib.sha256(f"{batch.checkpoint}\n{batch.query_id}".encode()).hexdigest()
    return f"wid-{batch.pipeline}-{scope[:16]}-{part}"


def client_config(sink: SinkSpec, role: str) -> dict[str, str]:
    """librdkafka's settings for `sink` (the `role` it plays, for messages):
    its brokers, its ``kafka.*`` options without the prefix (variables of
    `options_env` read in this process), a JAAS configuration as
    ``sasl.username``/``sasl.password``, and Java's partitioner. Raises
    ConfigError naming a JAAS configuration without both."""
    config = {} if sink.bootstrap_servers is None else {"bootstrap.servers": sink.bootstrap_servers}
    config.update((k.removeprefix("kafka."), str(v)) for k, v in sink.spark_options().items() if k.startswith("kafka."))
    jaas = config.pop("sasl.jaas.config", None)
    if jaas is not None:
        found = {name: value.replace('\\"', '"') for name, value in _JAAS.findall(jaas)}
        if set(found) != {"username", "password"}:
            raise ConfigError(f"{role}.options.kafka.sasl.jaas.config", "delivery = 'exactly-once' writes with "
                              "librdkafka, which takes a PLAIN or SCRAM login's username and password, and this "
                              "JAAS configuration holds no such pair",
                              "give kafka.sasl.username and kafka.sasl.password (in options_env)")
        config.setdefault("sasl.username", found["username"])
        config.setdefault("sasl.password", found["password"])
    config.setdefault("partitioner", "murmur2_random")
    return config


def check_sinks(sinks: Mapping[str, SinkSpec], batch: Batch, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Before the first write: for each exactly-once sink of `sinks` (role
    -> sink), that its client settings are librdkafka's, that its topic
    exists (or the brokers create it), and that the brokers start a
    transaction. Raises MissingDependencyError without the client,
    ConfigError naming a setting or the topic, SinkError naming the
    brokers' settings for transactions, each one line."""
    for role, sink in sinks.items():
        if sink.kind == "kafka" and sink.delivery == EXACTLY_ONCE:
            _probe(role, sink, batch, timeout_s)


def _probe(role: str, sink: SinkSpec, batch: Batch, timeout_s: float) -> None:
    kafka = client()
    config = client_config(sink, role)
    servers, topic = config.get("bootstrap.servers", "?"), sink.topic or ""
    try:
        producer = kafka.Producer({"enable.sparse.connections": False, **config, "logger": _QUIET,
                                   "transactional.id": transactional_prefix(batch, "probe")})
    except kafka.KafkaException as err:
        raise _setting_error(role, config, err) from None
    meta = _topic_metadata(producer, role, servers, topic, timeout_s)
    try:
        producer.init_transactions(timeout_s)
    except kafka.KafkaException as err:
        raise SinkError(_refused(role, servers, len(meta.brokers), err, timeout_s, batch.pipeline)) from None


def _topic_metadata(producer: Any, role: str, servers: str, topic: str, timeout_s: float) -> Any:
    """The brokers' metadata once they know `topic`. Asking for a topic
    they do not know makes brokers that create topics on first use create
    it (the answer says unknown while they do), so it is asked again for
    up to `TOPIC_WAIT_S`. Raises ConfigError naming the topic when it
    stays unknown, SinkError when the brokers do not answer."""
    kafka = client()
    deadline = time.monotonic() + min(timeout_s, TOPIC_WAIT_S)
    while True:
        try:
            meta = producer.list_topics(topic, timeout=timeout_s)
        except kafka.KafkaException as err:
            raise SinkError(f"sink error: Kafka at {servers} ({role}) did not answer within {timeout_s:g} s: "
                            f"{_text(err)}") from None
        found = meta.topics.get(topic)
        if found is not None and found.error is None:
            return meta
        if time.monotonic() > deadline:
            raise ConfigError(f"{role}.topic", f"Kafka topic {topic!r} does not exist on {servers}, and the brokers "
                              "did not create it on first use (auto.create.topics.enable = false, or the client "
                              "may not create topics)", f"create it (kafka-topics.sh --create --topic {topic})")
        time.sleep(0.2)


def _text(err: Any) -> str:
    return str(err.args[0].str()) if err.args and hasattr(err.args[0], "str") else str(err)


def _setting_error(role: str, config: Mapping[str, str], err: Any) -> ConfigError:
    """librdkafka refusing a setting of `config`, as one line naming the
    option (found by trying each alone when the message names none), and
    librdkafka's reason unless the option holds a secret."""
    text, kafka = _text(err), client()
    named = [k for k in config if f'"{k}"' in text or f" {k} " in f" {text} "]
    for key in named or config:
        try:
            kafka.Producer({key: config[key], "logger": _QUIET})
        except kafka.KafkaException as one:
            name, text = key, _text(one)
            break
    else:
        name = "?"
    shown = "(its value is a secret)" if is_secret(name) else f"({text.rstrip('.')})"
    return ConfigError(f"{role}.options.kafka.{name}", f"delivery = 'exactly-once' writes with librdkafka, which "
                       f"does not take this setting {shown}",
                       "give librdkafka's name and value (https://github.com/confluentinc/librdkafka/blob/master/"
                       "CONFIGURATION.md), e.g. kafka.ssl.ca.location for a trust store")


def _refused(role: str, servers: str, brokers: int, err: Any, timeout_s: float, pipeline: str) -> str:
    """One line on why the brokers did not start a transaction."""
    code, kafka = err.args[0].code() if err.args else None, client()
    head = f"sink error: Kafka at {servers} refuses transactions, which delivery = \"exactly-once\" ({role}) needs"
    if code == kafka.KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return (f"{head}: the client may not use the transactional ids wid-{pipeline}-*; grant WRITE and DESCRIBE on "
                f"TransactionalId wid-{pipeline}- and READ on Group wid-{pipeline}- (prefixed ACLs)")
    if code in (kafka.KafkaError._TIMED_OUT, kafka.KafkaError.COORDINATOR_NOT_AVAILABLE):
        return (f"{head}: no transaction started within {timeout_s:g} s. The brokers host transactions when "
                f"transaction.state.log.replication.factor (default 3) and transaction.state.log.min.isr (default 2) "
                f"are at most the brokers there are ({brokers} here): lower them on the brokers, or use delivery = "
                "\"at-least-once\"")
    return f"{head}: {_text(err)}"


def send(messages: DataFrame, sink: SinkSpec, batch: Batch, part: str) -> int:
    """Write (key, value, headers) rows to `sink`'s topic exactly once for
    this micro-batch, as `part` (``target``, ``target-delete``,
    ``dead_letter``): one transaction per writer with messages (module
    docstring); returns how many messages this attempt wrote (none of a
    writer that had committed them before). One Spark job: no emptiness
    check first (a writer without messages opens no transaction, and the
    check would cost a job as long as the write's)."""
    role = "dead_letter" if part == "dead_letter" else "target"
    config = tuple(sorted(client_config(sink, role).items()))
    txn = Transaction(transactional_prefix(batch, part), sink.topic or "", batch.batch_id or 0, part, config)
    writers = batch.writers or int(messages.sparkSession.conf.get("spark.sql.shuffle.partitions") or 1)
    spread = messages.repartition(writers, "key", "value").withColumn(WRITER, F.spark_partition_id())
    done = spread.mapInArrow(partial(write_partition, txn), RESULT).collect()
    return sum(int(r["written"]) for r in done)


__all__ = ["PARTS", "PROBE_TIMEOUT_S", "check_sinks", "client_config", "send", "transactional_prefix"]
