"""Exactly-once delivery to Kafka (`wid.io.kafka_eos`) against a real
broker: a micro-batch's messages are committed once, a replay or a retry
of it writes nothing, a zombie writer's open transaction is aborted and
fenced, messages land where Spark's own writer puts their key, the
brokers' refusals are one line each, and a pipeline writing exactly once
agrees with one writing at least once and with the streaming oracle, every
version of every window and every retraction (session windows, ``emit =
"on_update"``) once. A consumer's view is read with
``read_committed`` and, to show what the transactions hide,
``read_uncommitted``."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from tests.io.test_kafka import PIPELINE, messages, produce
from tests.kafka_check import (
    Kafka,
    micro_batches,
    offset_log,
    oracle_messages,
    tombstone_keys,
    window_rows,
)
from tests.sink_check import assert_same_rows
from tools import kafka_broker
from wid import run_pipeline
from wid.errors import ConfigError, MissingDependencyError, SinkError
from wid.io import kafka as wid_kafka
from wid.io import kafka_eos
from wid.io.batch import Batch
from wid.semantics.stream_oracle import run_stream
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import loads_pipeline

WRITERS = 2  # the test session's spark.sql.shuffle.partitions


def sink(kafka: Kafka, topic: str, delivery: str = "exactly-once", **more: Any) -> SinkSpec:
    return SinkSpec("kafka", topic=topic, bootstrap_servers=kafka.bootstrap, delivery=delivery, **more)


def pairs(msgs: list[Any]) -> Counter[tuple[bytes | None, bytes | None]]:
    return Counter((m.key, m.value) for m in msgs)


def test_a_micro_batch_is_committed_once_and_its_replay_writes_nothing(spark: Any, kafka: Kafka) -> None:
    out, plain = kafka.topic("eos", partitions=3), kafka.topic("alo", partitions=3)
    rows = spark.createDataFrame([(f"k{i}", i) for i in range(40)], "k STRING, n INT")
    batch = Batch("p", 7, checkpoint="/ck/once", query_id="q")
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], batch), sink(kafka, out), batch) == 40
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], batch), sink(kafka, out), batch) == 0  # a replay
    later = Batch("p", 8, checkpoint="/ck/once", query_id="q")
    assert wid_kafka.send(wid_kafka.window_messages(rows.limit(5), ["k"], later), sink(kafka, out), later) == 5
    written = kafka.read(out, "read_committed")
    assert Counter(m.header("wid.batch_id") for m in written) == {"7": 40, "8": 5}
    assert pairs(written) == pairs(kafka.read(out))  # nothing aborted: both isolation levels agree
    assert all(v == 1 for v in pairs(m for m in written if m.header("wid.batch_id") == "7").values())

    wid_kafka.send(wid_kafka.window_messages(rows, ["k"], batch), sink(kafka, plain, "at-least-once"), batch)
    spark_partition = {m.key: m.partition for m in kafka.read(plain)}  # Spark's writer: Java's partitioner
    assert {m.key: m.partition for m in written} == spark_partition and len(set(spark_partition.values())) == 3


def test_a_zombie_writer_is_fenced_and_its_open_transaction_aborted(spark: Any, kafka: Kafka) -> None:
    out = kafka.topic("zombie", partitions=2)
    batch = Batch("p", 3, checkpoint="/ck/zombie", query_id="q")
    zombies = []
    for writer in range(WRITERS):  # an earlier attempt's writers, killed inside their transactions
        zombie = Producer({"bootstrap.servers": kafka.bootstrap,
                           "transactional.id": f"{kafka_eos.transactional_prefix(batch, 'target')}-{writer}"})
        zombie.init_transactions(30)
        zombie.begin_transaction()
        zombie.produce(out, value=b"zombie", key=b"z%d" % writer)
        zombie.flush(30)
        zombies.append(zombie)
    rows = spark.createDataFrame([(f"k{i}", i) for i in range(30)], "k STRING, n INT")
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], batch), sink(kafka, out), batch) == 30

    committed, uncommitted = kafka.read(out, "read_committed"), kafka.read(out)
    assert len(committed) == 30 and not any(m.value == b"zombie" for m in committed)
    assert sum(m.value == b"zombie" for m in uncommitted) == WRITERS  # the aborted copies are there, hidden
    for zombie in zombies:
        with pytest.raises(KafkaException):
            zombie.commit_transaction(10)  # fenced: a zombie can never commit after the new writer started


def test_the_client_settings_are_librdkafka_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WID_TEST_JAAS", 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                        'username="wid" password="Pl4nted";')
    secured = SinkSpec("kafka", topic="t", bootstrap_servers="h:9093", delivery="exactly-once",
                       options={"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512"},
                       options_env={"kafka.sasl.jaas.config": "WID_TEST_JAAS"})
    assert kafka_eos.client_config(secured, "target") == {
        "bootstrap.servers": "h:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "wid", "sasl.password": "Pl4nted", "partitioner": "murmur2_random"}
    monkeypatch.setenv("WID_TEST_JAAS", "com.example.Kerberos required;")
    with pytest.raises(ConfigError, match=r"target\.options\.kafka\.sasl\.jaas\.config: .*username and password"):
        kafka_eos.client_config(secured, "target")

    java_only = SinkSpec("kafka", topic="t", bootstrap_servers="h:9093", delivery="exactly-once",
                         options={"kafka.ssl.truststore.location": "/etc/trust.jks",
                                  "kafka.ssl.truststore.password": "Pl4nted"})
    with pytest.raises(ConfigError, match=r"dead_letter\.options\.kafka\.ssl\.truststore\.\w+: .*librdkafka") as err:
        kafka_eos.check_sinks({"dead_letter": java_only}, Batch("p"))
    assert "Pl4nted" not in str(err.value)


def test_a_missing_client_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # as when it is not installed
    target = SinkSpec("kafka", topic="t", bootstrap_servers="h:9093", delivery="exactly-once")
    with pytest.raises(MissingDependencyError, match=r"confluent-kafka .* Fix: pip install 'spark-wid\[kafka\]'"):
        kafka_eos.check_sinks({"target": target}, Batch("p"))


def test_brokers_without_the_topic_or_transactions_are_named_in_one_line() -> None:
    # one broker whose transaction log asks for 3 replicas, creating no topic on first use
    strict = kafka_broker.start(Path(tempfile.mkdtemp(prefix="wid-kafka-strict-")), settings={
        "transaction.state.log.replication.factor": "3", "auto.create.topics.enable": "false"})
    try:
        from tools.kafka_client import create_topic

        target = SinkSpec("kafka", topic="windows", bootstrap_servers=strict.bootstrap_servers,
                          delivery="exactly-once")
        with pytest.raises(ConfigError, match=r"target\.topic: Kafka topic 'windows' does not exist .*"
                                              r"auto\.create\.topics\.enable = false"):
            kafka_eos.check_sinks({"target": target}, Batch("p"), timeout_s=5)
        create_topic(strict.bootstrap_servers, "windows", 1)
        with pytest.raises(SinkError, match=r"refuses transactions.*transaction\.state\.log\.replication\.factor .*"
                                            r"\(1 here\)") as err:
            kafka_eos.check_sinks({"target": target}, Batch("p"), timeout_s=5)
        assert "\n" not in str(err.value)
        kafka_eos.check_sinks({"target": SinkSpec("kafka", topic="windows", bootstrap_servers=strict.bootstrap_servers)},
                              Batch("p"), timeout_s=5)  # at-least-once needs no transaction
    finally:
        kafka_broker.stop(strict)


def test_brokers_that_create_topics_on_first_use_pass_the_probe(kafka: Kafka) -> None:
    topic = f"created-on-first-use-{id(kafka)}"
    kafka_eos.check_sinks({"target": sink(kafka, topic)}, Batch("p"))
    assert kafka.read(topic) == []  # it exists now, empty


def test_exactly_once_and_at_least_once_pipelines_agree_with_the_oracle(spark: Any, kafka: Kafka,
                                                                       tmp_path: Path) -> None:
    topic = kafka.topic("clicks", partitions=2)
    produced = produce(kafka, topic, messages(150))
    reports, views = {}, {}
    for delivery in ("at-least-once", "exactly-once"):
        out, dlq = kafka.topic("windows", partitions=2), kafka.topic("dlq")
        target, dead = (f'kind = "kafka"\ntopic = "{t}"\nbootstrap_servers = "{kafka.bootstrap}"\n'
                        f'delivery = "{delivery}"' for t in (out, dlq))
        text = PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, target=target, dead_letter=dead)
        text = text.replace('late_data = "dlq"', 'late_data = "dlq"\nemit = "on_update"').replace(
            'kind = "tumbling"\nduration_ms = 10000', 'kind = "session"\ngap_ms = 3000')  # versions and retractions
        text = text.replace('checkpoint = "ck"', f'checkpoint = "ck-{delivery}"')
        spec = loads_pipeline(text.replace("[source]\n", '[source]\noptions = { maxOffsetsPerTrigger = "40" }\n'),
                              base_dir=str(tmp_path))
        reports[delivery] = run_pipeline(spec, spark)
        views[delivery] = (kafka.read(out, "read_committed"), kafka.read(dlq, "read_committed"))

    def counts(report: Any) -> tuple[int, ...]:
        return (report.rows_in, report.rows_rejected, report.rows_late_dropped, report.rows_late_dlq,
                report.rows_aggregated, report.windows_emitted, len(report.batches))
    assert reports["exactly-once"].identity_holds and counts(reports["exactly-once"]) == counts(reports["at-least-once"])
    for (alo, eos) in zip(views["at-least-once"], views["exactly-once"], strict=True):
        assert pairs(eos) == pairs(alo) and eos  # the same messages, each as often

    log = offset_log(tmp_path / "ck-exactly-once")
    assert len(log) > 2
    results = run_stream(micro_batches(log, produced), spec.window)
    columns = ["window_start", "window_end", "k", "n", "total", "is_final"]
    every_version, retracted = oracle_messages(spec.window, results, columns)
    got = window_rows(views["exactly-once"][0], columns)
    assert_same_rows(spec.window, got, every_version)
    assert len({(r["window_start"], r["k"]) for r in got}) < len(got)  # windows in several versions, each once
    assert tombstone_keys(views["exactly-once"][0]) == retracted and retracted  # each retraction once
    want_dead = sum(len(r.late) + len(r.rejected) for r in results) + sum(
        not isinstance(r, dict) for r in produced.values())
    assert len(views["exactly-once"][1]) == want_dead


def test_the_refused_rows_read_back_are_the_committed_ones(spark: Any, kafka: Kafka) -> None:
    dlq = kafka.topic("refused")
    headers = [("wid.pipeline", b"p"), ("wid.source", b"target"), ("wid.batch_id", b"4")]
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": "test-refused"})
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        producer.produce(dlq, value=b"{}", headers=headers)
        producer.flush(30)  # on the broker: an abort would otherwise drop it unsent
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    assert wid_kafka.refused_counts(spark, sink(kafka, dlq), "p", 0) == {4: 2}
    assert wid_kafka.refused_counts(spark, sink(kafka, dlq, "at-least-once"), "p", 0) == {4: 3}


def test_a_source_reads_a_transactional_topic_read_committed(spark: Any, kafka: Kafka, tmp_path: Path) -> None:
    # Spark's kafka.isolation.level, passed through the source's options (docs/how-to/kafka.md)
    from wid.io.kafka import reader_options

    topic = kafka.topic("upstream")
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": "test-upstream"})
    producer.init_transactions(30)
    for i, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for j in range(3):
            producer.produce(topic, value=json.dumps({"k": "a", "v": float(i)}).encode(), key=b"%d" % j,
                             timestamp=1_700_000_000_000 + i * 100 + j)
        producer.flush(30)  # on the broker: an abort would otherwise drop them unsent
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    text = PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, target='kind = "console"',
                           dead_letter='kind = "console"')
    spec = loads_pipeline(text.replace("[source]\n", '[source]\noptions = { "kafka.isolation.level" = '
                                                      '"read_committed" }\n'), base_dir=str(tmp_path))
    assert run_pipeline(spec, spark).rows_in == 6  # the aborted transaction's 3 messages are not read
    uncommitted = {**reader_options(spec.source), "kafka.isolation.level": "read_uncommitted"}
    assert spark.read.format("kafka").options(**uncommitted).load().count() == 9


def test_the_writers_are_the_shuffle_partitions_the_checkpoint_logged(spark: Any, tmp_path: Path) -> None:
    # Spark fixes spark.sql.shuffle.partitions for a query in its offset log; a restart's session may say
    # otherwise, and the writers (so the transactional ids) must line up with the first attempt's
    from wid.pipelines.write import first_batch

    spec = loads_pipeline(PIPELINE.format(topic="t", bootstrap="h:1", target=(
        'kind = "kafka"\ntopic = "w"\nbootstrap_servers = "h:1"\ndelivery = "exactly-once"'),
        dead_letter='kind = "console"'), base_dir=str(tmp_path))
    offsets = tmp_path / "ck" / "offsets"
    offsets.mkdir(parents=True)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_000, "conf": {"spark.sql.shuffle.partitions": "5"}}
    (offsets / "4").write_text(f'v1\n{json.dumps(meta)}\n{{"t":{{"0":3}}}}\n')
    (tmp_path / "ck" / "metadata").write_text('{"id":"8f0e6d1c-query"}\n')
    batch = first_batch(spec, spark, str(tmp_path / "ck"), 4, run_started_ms=2_000)
    assert (batch.writers, batch.replay_since_ms, batch.query_id) == (5, 1_000, "8f0e6d1c-query")
    assert spark.conf.get("spark.sql.shuffle.partitions") == str(WRITERS)  # not what the writers follow
