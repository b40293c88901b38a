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


def read_all(bootstrap: str, topic: str, timeout_s: float = 30) -> list[Received]:
    """Every message `topic` holds now, by partition then offset. Raises
    TimeoutError when the messages do not arrive within `timeout_s` a poll."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"wid-read-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics[topic]
        want = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)[1]
                   for p in meta.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
        out: list[Received] = []
        while len(out) < want:
            msg = consumer.poll(timeout_s)
            if msg is None:
                raise TimeoutError(f"read {len(out)} of {want} messages of {topic}")
            if msg.error():
                raise RuntimeError(str(msg.error()))
            out.append(Received(msg.topic(), msg.partition(), msg.offset(), msg.timestamp()[1], msg.key(),
                                msg.value(), dict(msg.headers() or [])))
        return sorted(out, key=lambda m: (m.partition, m.offset))
    finally:
        consumer.close()
