"""The test suite's Kafka: one real broker per test session
(`tools.kafka_broker`, KRaft on 127.0.0.1), topics per test, and a client
(confluent-kafka) that produces with chosen partitions and timestamps and
reads a topic back whole. A missing piece (Java, Maven, the jars) fails
the session's first Kafka test, never skips it."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.sink_check import as_sink_row, iso
from tools import kafka_broker, kafka_client
from wid.semantics.sink_state import natural_key
from wid.semantics.stream_oracle import BatchResult, MicroBatch
from wid.spec import Window

_names = itertools.count()


Message = kafka_client.Received


class Kafka:
    """A running broker and the client calls tests make on it."""

    def __init__(self, broker: kafka_broker.Broker) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap_servers

    def topic(self, prefix: str = "t", partitions: int = 1, compacted: bool = False) -> str:
        """A new topic of `partitions` partitions (retention off: test event
        times are years old)."""
        name = f"{prefix}-{next(_names)}"
        kafka_client.create_topic(self.bootstrap, name, partitions, {"cleanup.policy": "compact"} if compacted else None)
        return name

    def produce(self, topic: str, messages: Iterable[kafka_client.Message]) -> int:
        """Produce (partition, timestamp_ms, key, value) in order; returns how many."""
        return kafka_client.produce(self.bootstrap, topic, messages)

    def read(self, topic: str, isolation: str = "read_uncommitted") -> list[Message]:
        """Every message of `topic`, by partition then offset, as a consumer
        with `isolation` reads them (``read_committed``: committed
        transactions' only)."""
        return kafka_client.read_all(self.bootstrap, topic, isolation=isolation)


@dataclass(frozen=True)
class LoggedBatch:
    """A micro-batch as the checkpoint's offset log has it: its id, start
    (epoch ms) and, per topic and partition, the offset it read up to."""

    batch_id: int
    batch_ms: int
    ends: dict[str, dict[int, int]]


def offset_log(checkpoint: Path) -> list[LoggedBatch]:
    """The micro-batches a stream ran, from its checkpoint (one Kafka source)."""
    out = []
    for path in sorted((p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
        lines = path.read_text().splitlines()
        ends = json.loads(lines[2])
        out.append(LoggedBatch(int(path.name), int(json.loads(lines[1])["batchTimestampMs"]),
                               {t: {int(p): int(o) for p, o in parts.items()} for t, parts in ends.items()}))
    return out


def micro_batches(log: list[LoggedBatch], produced: Produced,
                  source: str = "source") -> list[MicroBatch]:
    """The oracle's micro-batches for a Kafka source: what each logged batch
    read, from `produced` ((topic, partition, offset) -> the source row the
    message becomes; anything else for a malformed message, which the
    oracle never sees), at the batch's logged time."""
    start: dict[tuple[str, int], int] = {}
    batches = []
    for b in log:
        rows = []
        for topic, parts in b.ends.items():
            for partition, end in sorted(parts.items()):
                first = start.get((topic, partition), 0)
                rows += [(source, produced[topic, partition, o]) for o in range(first, end)
                         if isinstance(produced[topic, partition, o], dict)]
                start[topic, partition] = end
        batches.append(MicroBatch(rows, b.batch_ms))
    return batches


Produced = dict[tuple[str, int, int], Any]  # (topic, partition, offset) -> source row, or the raw value


def produce_rows(kafka: Kafka, topic: str, messages: list[kafka_client.Message],
                 payload: Callable[[bytes | None], dict[str, Any] | None], before: Produced | None = None) -> Produced:
    """Produce `messages` to `topic` and return `before` (what was produced
    to it earlier) plus the source row each new message becomes, by
    position: `payload` of its value (None: malformed) with the Kafka
    columns, or the raw value for a malformed message."""
    kafka.produce(topic, messages)
    out: Produced = dict(before or {})
    next_offset: Counter[int] = Counter(p for t, p, _ in out if t == topic)
    for partition, ts, key, value in messages:
        offset = next_offset[partition]
        next_offset[partition] += 1
        row = payload(value)
        out[topic, partition, offset] = value if row is None else {
            **row, "_event_ts": datetime.fromtimestamp(ts / 1000, UTC), "_topic": topic, "_partition": partition,
            "_offset": offset, "_key": key, "_value": value}
    return out


def start_kafka(overrides: dict[str, str] | None = None) -> Iterator[Kafka]:
    """A broker for the session (with `overrides` over its settings,
    `tools.kafka_broker.properties`), stopped at its end."""
    home = Path(tempfile.mkdtemp(prefix="wid-kafka-"))
    broker = kafka_broker.start(home, settings=overrides)
    try:
        yield Kafka(broker)
    finally:
        kafka_broker.stop(broker)


def _bound(text: str) -> str:
    """A window bound from the Kafka sink's JSON as the SQLite sink writes it."""
    return iso(round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000))


def _bounds_as_text(row: dict[str, Any]) -> dict[str, Any]:
    return {c: _bound(v) if c in ("window_start", "window_end") and v is not None else v for c, v in row.items()}


def window_rows(messages: Iterable[Message], columns: list[str]) -> list[dict[str, Any]]:
    """The window rows of a Kafka target's messages (tombstones left out),
    over `columns`, window bounds as the SQLite sink writes them
    (`tests.sink_check.iso`), to compare with the oracle's."""
    rows = [_bounds_as_text(json.loads(m.value)) for m in messages if m.value is not None]
    return [{c: r[c] for c in columns} for r in rows]


def tombstone_keys(messages: Iterable[Message]) -> Counter[tuple[tuple[str, Any], ...]]:
    """The natural keys of a Kafka target's tombstones (retracted windows),
    each as sorted (column, value) pairs, bounds as `window_rows` gives them."""
    return Counter(tuple(sorted(_bounds_as_text(json.loads(m.key or b"{}")).items()))
                   for m in messages if m.value is None)


def oracle_messages(window: Window, results: Iterable[BatchResult],
                    columns: list[str]) -> tuple[list[dict[str, Any]], Counter[tuple[tuple[str, Any], ...]]]:
    """What the streaming oracle's `results` write to a Kafka target, each
    once: every version of every window over `columns` (``is_final`` with
    ``emit = "on_update"``) as `window_rows` reads them, and the retracted
    keys as `tombstone_keys` reads them."""
    key = natural_key(window, columns)
    rows, retracted = [], Counter()
    for e in (e for r in results for e in r.emitted):
        row = as_sink_row(window, {**e.row, "is_final": e.final})
        if e.retract:
            retracted[tuple(sorted((c, row[c]) for c in key))] += 1
        else:
            rows.append({c: row[c] for c in columns})
    return rows, retracted


def values(messages: Iterable[Message]) -> list[Any]:
    """The values of `messages` as text (None for tombstones)."""
    return [None if m.value is None else m.value.decode() for m in messages]
