"""Kafka against a real broker (`tests.kafka_check`): the source decodes
JSON values and keeps each message's position and bytes; Kafka time is the
event time by default; malformed messages go to the dead letter; windows go
to a topic keyed by their natural key; dead letters go to a topic as the
original bytes with the reason in headers; a replayed micro-batch does not
write a message twice. Expected windows and late rows come from the
streaming oracle over the micro-batches the checkpoint logged."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import COUNT_AND_SUM
from tests.kafka_check import Kafka, Produced, micro_batches, offset_log, produce_rows
from tests.sink_check import assert_same_rows, folded, read_table
from wid import run_pipeline
from wid.errors import ConfigError
from wid.semantics import reasons
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import loads_pipeline

T0 = 1_700_000_000_000  # epoch ms

PIPELINE = """
name = "clicks"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "k STRING, v DOUBLE"

[transform.window]
kind = "tumbling"
duration_ms = 10000
group_by = ["k"]
lateness_ms = 2000
late_data = "dlq"
max_groups_per_window = 100

""" + COUNT_AND_SUM + """
[stream]
checkpoint = "ck"

[target]
{target}

[dead_letter]
{dead_letter}
"""
SQLITE_TARGET = 'kind = "sqlite"\npath = "out.sqlite"\ntable = "windows"'
SQLITE_DEAD = 'kind = "sqlite"\npath = "out.sqlite"\ntable = "dead_letter"'
BAD = [b"not json", b"\xff\xfe{", None, b'{"k": "a", "v": "many"}',  # a tombstone; a value of the wrong type
       b'{"k": "\xffa", "v": 1.0}',  # JSON, but not UTF-8: judged on the bytes, Spark's parser would read U+FFFD
       '{"k": "\ufffd", "v": 2.0}'.encode()]  # U+FFFD itself, in valid UTF-8: data (a good click)


def messages(n: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, timestamp ms, key, value): n good clicks over 2
    partitions, partition 1 running 15 s behind partition 0, one click
    with a null key, and the `BAD` values."""
    out = []
    for i in range(n):
        partition = i % 2
        ts = T0 + i * 700 - (15_000 if partition else 0)
        out.append((partition, ts, f"u{i}".encode(), json.dumps({"k": "ab"[i % 3 % 2], "v": float(i % 5)}).encode()))
    out.append((0, T0 + 5_000, b"nk", json.dumps({"k": None, "v": 1.0}).encode()))
    out += [(1, T0 + 9_000, b"bad%d" % i, value) for i, value in enumerate(BAD)]
    return out


def clicks(value: bytes | None) -> dict[str, Any] | None:
    """A click's payload, or None when the value does not decode as one."""
    try:
        payload = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload.get("v"), float) else None


def produce(kafka: Kafka, topic: str, msgs: list[tuple[int, int, bytes | None, bytes | None]]) -> Produced:
    return produce_rows(kafka, topic, msgs, clicks)


def pipeline(tmp_path: Path, kafka: Kafka, topic: str, target: str = SQLITE_TARGET, dead: str = SQLITE_DEAD,
             extra: str = "") -> Any:
    text = PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, target=target, dead_letter=dead)
    return loads_pipeline(text.replace("[stream]\n", f"[stream]\n{extra}"), base_dir=str(tmp_path))


def test_a_kafka_stream_windows_kafka_time_per_partition_and_rejects_bad_messages(
        spark: Any, kafka: Kafka, tmp_path: Path) -> None:
    topic = kafka.topic("clicks", partitions=2)
    produced = produce(kafka, topic, messages(120))
    spec = pipeline(tmp_path, kafka, topic)
    report = run_pipeline(spec, spark)

    batches = micro_batches(offset_log(tmp_path / "ck"), produced)
    results = run_stream(batches, spec.window)
    written = read_table(str(tmp_path / "out.sqlite"), "windows")
    assert written and report.rows_in == len(produced) and report.identity_holds
    assert_same_rows(spec.window, written, folded(spec.window, results, list(written[0])))

    dead = read_table(str(tmp_path / "out.sqlite"), "dead_letter")
    got = Counter((d["reason"], json.loads(d["row_json"])["_partition"], json.loads(d["row_json"])["_offset"])
                  for d in dead for _ in range(d["occurrences"]))
    want = Counter([(reasons.MALFORMED, p, o) for (_, p, o), row in produced.items() if not isinstance(row, dict)]
                   + [(d.reason, d.row["_partition"], d.row["_offset"]) for r in results for d in [*r.rejected,
                                                                                                    *r.late]])
    assert got == want
    assert any(reason == reasons.null_key("k") for reason, _, _ in want)
    undecodable = next(d for d in dead if '"_value":"//57"' in d["row_json"])  # b"\xff\xfe{" in base64
    assert json.loads(undecodable["row_json"])["_key"] == "YmFkMQ=="  # b"bad1": the key's bytes are kept


def test_windows_and_dead_letters_go_to_topics(spark: Any, kafka: Kafka, tmp_path: Path) -> None:
    topic, out, dlq = kafka.topic("clicks", partitions=2), kafka.topic("windows"), kafka.topic("dlq")
    produced = produce(kafka, topic, messages(60))
    spec = pipeline(tmp_path, kafka, topic, f'kind = "kafka"\ntopic = "{out}"\nbootstrap_servers = "{kafka.bootstrap}"',
                    f'kind = "kafka"\ntopic = "{dlq}"\nbootstrap_servers = "{kafka.bootstrap}"')
    run_pipeline(spec, spark)
    results = run_stream(micro_batches(offset_log(tmp_path / "ck"), produced), spec.window)

    windows = kafka.read(out)
    latest = {m.key: json.loads(m.value or b"") for m in windows}  # what a compacted topic keeps
    for key, row in latest.items():
        assert json.loads(key or b"") == {"window_start": row["window_start"], "k": row["k"]}
        assert row["window_end"] and {m.header("wid.pipeline") for m in windows} == {"clicks"}
    want = folded(spec.window, results, ["window_start", "window_end", "k", "n", "total"])
    assert sorted((r["k"], r["n"], r["total"]) for r in latest.values()) == sorted(
        (r["k"], r["n"], r["total"]) for r in want)

    dead = kafka.read(dlq)
    by_position = {(m.header("wid.partition"), m.header("wid.offset")): m for m in dead}
    assert len(by_position) == len(dead)  # each dead letter once
    for (_, partition, offset), row in produced.items():
        if not isinstance(row, dict):  # malformed: its bytes as they arrived
            m = by_position[str(partition), str(offset)]
            assert m.value == row and m.header("wid.reason") == reasons.MALFORMED and m.header("wid.topic") == topic
    late = [d for r in results for d in [*r.late, *r.rejected]]
    assert late and all(by_position[str(d.row["_partition"]), str(d.row["_offset"])].value == d.row["_value"]
                        and by_position[str(d.row["_partition"]), str(d.row["_offset"])].key == d.row["_key"]
                        for d in late)
    assert len(dead) == len(late) + sum(not isinstance(r, dict) for r in produced.values())


def test_a_replayed_micro_batch_writes_no_message_twice(spark: Any, kafka: Kafka) -> None:
    from wid.io import kafka as wid_kafka
    from wid.io.batch import Batch
    from wid.spec.pipeline import SinkSpec

    out = kafka.topic("replay")
    sink = SinkSpec("kafka", topic=out, bootstrap_servers=kafka.bootstrap)
    rows = spark.createDataFrame([(f"k{i}", i) for i in range(5)], "k STRING, n INT")
    started = int(datetime.now(UTC).timestamp() * 1000)
    first = Batch("p", 7)
    assert wid_kafka.send(wid_kafka.window_messages(rows.limit(3), ["k"], first), sink, first) == 3  # then a crash
    replay = Batch("p", 7, replay_since_ms=started)
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], replay), sink, replay) == 2
    again = Batch("p", 8, replay_since_ms=started)  # another micro-batch's identical rows are new
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], again), sink, again) == 5
    assert Counter(m.key for m in kafka.read(out)) == {f'{{"k":"k{i}"}}'.encode(): 2 for i in range(5)}


def test_kafka_settings_are_checked_at_load_time() -> None:
    from wid.spec.pipeline import SinkSpec, SourceSpec

    with pytest.raises(ConfigError, match="exactly one of topic, topics and pattern"):
        SourceSpec("kafka", topic="a", pattern="b.*", bootstrap_servers="h:1")
    with pytest.raises(ConfigError, match="bootstrap_servers"):
        SourceSpec("kafka", topic="a")
    with pytest.raises(ConfigError, match="only format = 'kafka'"):
        SourceSpec("json", path="x", topic="a")
    with pytest.raises(ConfigError, match="topic"):
        SinkSpec("kafka", bootstrap_servers="h:1")
    with pytest.raises(ConfigError, match="no transactions"):
        loads_pipeline(PIPELINE.format(topic="t", bootstrap="h:1", target=SQLITE_TARGET, dead_letter=SQLITE_DEAD)
                       .replace('late_data = "dlq"', 'late_data = "dlq"\ncrash_recovery = "kafka_eos"'))
    spec = loads_pipeline(PIPELINE.format(topic="t", bootstrap="h:1", target=SQLITE_TARGET, dead_letter=SQLITE_DEAD))
    assert spec.window.event_time_column == "_event_ts"  # Kafka time by default


JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="wid" password="Pl4nted";'


def test_options_env_puts_the_jaas_config_in_spark_s_reader_and_writer_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from wid.io import kafka as wid_kafka
    from wid.spec.pipeline import SinkSpec, SourceSpec

    env = {"kafka.sasl.jaas.config": "WID_TEST_KAFKA_JAAS"}
    secure = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512"}
    source = SourceSpec("kafka", topic="t", bootstrap_servers="h:1", options=secure, options_env=env)
    sink = SinkSpec("kafka", topic="w", bootstrap_servers="h:1", options=secure, options_env=env)
    monkeypatch.setenv("WID_TEST_KAFKA_JAAS", JAAS)
    assert wid_kafka.reader_options(source) == {"startingOffsets": "earliest", "subscribe": "t",
                                                "kafka.bootstrap.servers": "h:1", **secure,
                                                "kafka.sasl.jaas.config": JAAS}
    assert wid_kafka.writer_options(sink) == {"topic": "w", "kafka.bootstrap.servers": "h:1", **secure,
                                              "kafka.sasl.jaas.config": JAAS}
    assert "Pl4nted" not in repr(source) + repr(sink)
    monkeypatch.delenv("WID_TEST_KAFKA_JAAS")
    for build in (lambda: wid_kafka.reader_options(source), lambda: wid_kafka.writer_options(sink)):
        with pytest.raises(ConfigError, match=r"environment variable WID_TEST_KAFKA_JAAS \(for option "
                                              r"kafka.sasl.jaas.config\) is not set in this process \(pid "):
            build()


def test_options_env_reaches_a_real_broker(spark: Any, kafka: Kafka, monkeypatch: pytest.MonkeyPatch) -> None:
    # The brokers themselves from the environment: nothing is read or written unless they reach Spark.
    from wid.io import kafka as wid_kafka
    from wid.io.batch import Batch
    from wid.spec.pipeline import SinkSpec, SourceSpec

    monkeypatch.setenv("WID_TEST_KAFKA_BROKERS", kafka.bootstrap)
    env = {"kafka.bootstrap.servers": "WID_TEST_KAFKA_BROKERS"}
    out = kafka.topic("from-env")
    rows = spark.createDataFrame([(f"k{i}", i) for i in range(4)], "k STRING, n INT")
    batch = Batch("p", 0)
    assert wid_kafka.send(wid_kafka.window_messages(rows, ["k"], batch), SinkSpec("kafka", topic=out, options_env=env),
                          batch) == 4
    assert sorted(m.key for m in kafka.read(out)) == [f'{{"k":"k{i}"}}'.encode() for i in range(4)]
    source = SourceSpec("kafka", topic=out, options_env=env)
    read = spark.read.format("kafka").options(**wid_kafka.reader_options(source)).load()
    assert sorted(r.key for r in read.collect()) == [f'{{"k":"k{i}"}}'.encode() for i in range(4)]


@pytest.mark.parametrize(("spark_version", "release"), [
    ("4.0.0", "4.0.0"), ("4.0.5", "4.0.0"),  # 4.0.1-4.0.5's connectors do not resolve (no token-provider jar)
    ("4.1.0", "4.1.1"), ("4.1.4", "4.1.1"), ("4.2.0", "4.2.0"), ("4.2.1", "4.2.0"),
    ("4.3.0", "4.2.0"), ("4.4.1", "4.2.0"),  # past every listed line: the newest line's connector
    ("3.5.3", "3.5.3"),  # before every listed line: its own release
])
def test_each_spark_release_gets_a_connector_that_resolves(spark_version: str, release: str) -> None:
    from wid.io import kafka as wid_kafka

    assert wid_kafka.connector_release(spark_version) == release
    packages = wid_kafka.with_connector({"spark.jars.packages": "a:b:1"}, spark_version)["spark.jars.packages"]
    assert packages == f"a:b:1,org.apache.spark:spark-sql-kafka-0-10_2.13:{release}"
