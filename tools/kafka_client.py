"""Producing to a Kafka topic from Python (confluent-kafka): what the demo
feeder, the tests and the benchmarks share."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

Message = tuple[int, int, bytes | None, bytes | None]  # (partition, timestamp ms, key, value)


def create_topic(bootstrap: str, topic: str, partitions: int, config: Mapping[str, str] | None = None) -> None:
    """Create `topic` with `partitions` partitions and one replica, with time
    retention off (test and demo event times are years old) and `config`,
    unless it exists."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=30).topics:
        return
    new = NewTopic(topic, partitions, 1, config={"retention.ms": "-1", **(config or {})})
    admin.create_topics([new])[topic].result(30)


def produce(bootstrap: str, topic: str, messages: Iterable[Message]) -> int:
    """Produce `messages` in order (idempotent producer, so a retry never
    duplicates or reorders); returns how many. Raises RuntimeError when Kafka
    does not take them all within a minute."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    n = 0
    for partition, timestamp_ms, key, value in messages:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=partition, timestamp=timestamp_ms)
                break
            except BufferError:  # the local queue is full: let deliveries drain
                producer.poll(0.1)
        n += 1
    if producer.flush(60) != 0:
        raise RuntimeError(f"Kafka did not take every message for {topic}")
    return n


@dataclass(frozen=True)
class Received:
    """A message as read back: its position, timestamp (epoch ms), key,
    value (bytes or None) and headers (name -> bytes or None)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes | None]

    def header(self, name: str) -> str | None:
        value = self.headers.get(name)
        return None if value is None else value.decode()


def read_all(bootstrap: str, topic: str, timeout_s: float = 30, isolation: str = "read_uncommitted") -> list[Received]:
    """Every message `topic` holds now, by partition then offset, as a
    consumer with `isolation` (``read_uncommitted``, Kafka's default, or
    ``read_committed``: only committed transactions' messages) reads them:
    each partition is read to its end (the end of its committed messages
    for ``read_committed``). Raises TimeoutError when a partition's end
    does not arrive within `timeout_s` a poll."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wid-read-{topic}",
                         "enable.auto.commit": False, "enable.partition.eof": True, "isolation.level": isolation})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
        reading, out = set(meta.partitions), []
        while reading:
            msg = consumer.poll(timeout_s)
            if msg is None:
                raise TimeoutError(f"read {len(out)} messages of {topic}; partitions {sorted(reading)} did not end")
            if msg.error() and msg.error().code() == KafkaError._PARTITION_EOF:
                reading.discard(msg.partition())
            elif msg.error():
                raise RuntimeError(str(msg.error()))
            else:
                out.append(Received(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(),
                                    msg.value(), dict(msg.headers() or [])))
        return sorted(out, key=lambda m: (m.partition, m.offset))
    finally:
        consumer.close()
