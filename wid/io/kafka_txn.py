"""The writer task of exactly-once delivery to Kafka (`wid.io.kafka_eos`
plans it): the messages of one writer of one micro-batch written in one
Kafka transaction, with the micro-batch id committed in it.

This module runs in Spark's Python workers. Each task gets its writer's
rows (``key``, ``value``, ``headers`` and the writer's index, `WRITER`) as
Arrow batches (``mapInArrow``), and:

1. takes the writer's producer, kept in the worker from an earlier
   micro-batch, or starts one: ``init_transactions`` of the writer's
   ``transactional.id`` fences every earlier producer of that id (a task of
   an earlier attempt, an executor of a killed run) and aborts the
   transaction it left open; then reads the micro-batch the id last
   committed (`committed_batch`);
2. writes nothing when that micro-batch is this one or later (a task
   retried after its commit, a micro-batch replayed after a crash);
3. begins a transaction and first adds the marker, the consumer-group
   offset batch id + 1 (``send_offsets_to_transaction``): the coordinator
   answers at once, so a kept producer that another has fenced learns it
   before writing any message, and is replaced (step 1) once;
4. produces the messages and commits. Any error aborts (best effort),
   forgets the producer and fails the task, which Spark retries.

Producers are kept in the worker process between micro-batches because
starting one costs a round trip to the coordinator, and up to half a
second when the id committed a moment ago (the coordinator is still
writing that commit's markers; librdkafka waits and retries). Spark reuses
its Python workers, so a writer's task usually finds its producer; when
the task runs in another worker, that worker starts its own and fences the
kept one.

**The test hook.** ``WID_TEST_KAFKA_TXN`` (JSON; read in the worker, for
the fault-injection tests only) may hold ``dir``: a file
``open-<part>-<batch>-<writer>`` is written there once the transaction's
messages are on the broker (flushed), and ``committed-...`` once it
commits; ``pause_ms``: a wait between the two, so that a test can kill the
run inside the transaction; ``fail_batch`` (with ``fail_part``): the first
attempt of that micro-batch's writer tasks fails after flushing, leaving
its transaction open as a killed executor would (its producer is neither
aborted nor closed, and a file ``failed-...`` says so), and Spark's retry
must fence it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from wid.errors import MissingDependencyError, SinkError
from wid.versions import pip_install

WRITER = "_wid_writer"  # the writer's index: the Spark partition of the messages
RESULT = "writer INT, written BIGINT, skipped BOOLEAN"  # one row per task that had messages
HOOK = "WID_TEST_KAFKA_TXN"
CALL_TIMEOUT_S = 60.0  # a transactional call's bound (librdkafka's own transaction.timeout.ms is 60 s)
FIX = f"{pip_install('kafka')} (in the Python of the driver and of every executor)"


@dataclass(frozen=True)
class Transaction:
    """What a writer task needs: the transactional ids' `prefix` (the
    writer's index follows it), the `topic`, librdkafka's `config` (it may
    hold secrets: never shown), the micro-batch id `batch_id` and the
    `part` written (``target``, ``target-delete``, ``dead_letter``)."""

    prefix: str
    topic: str
    batch_id: int
    part: str
    config: tuple[tuple[str, str], ...] = field(repr=False)


@dataclass
class _Writer:
    """A kept producer of one transactional id, the consumer whose group
    holds the id's marker, and the last micro-batch the id committed as
    this producer knows it (None: none)."""

    producer: Any
    consumer: Any
    done: int | None


_LOG = logging.getLogger("wid.kafka_txn.librdkafka")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False  # a fenced kept producer logs a fatal error, which is expected (`_begin`)
_KEPT: dict[tuple[str, tuple[tuple[str, str], ...]], _Writer] = {}
_ABANDONED: list[_Writer] = []  # the test hook's failed writers, kept alive and open as a killed executor's


def client() -> Any:
    """The confluent_kafka module, or MissingDependencyError naming the extra."""
    try:
        import confluent_kafka
    except ImportError as err:
        raise MissingDependencyError("the Kafka client confluent-kafka (delivery = \"exactly-once\")", FIX) from err
    return confluent_kafka


def committed_batch(consumer: Any, topic: str) -> int | None:
    """The last micro-batch id committed by the transactional id whose
    group `consumer` reads (its offset on partition 0 of `topic`, less
    one), None when none was."""
    tp = client().TopicPartition(topic, 0)
    offset = consumer.committed([tp], timeout=CALL_TIMEOUT_S)[0].offset
    return offset - 1 if offset >= 1 else None


def _start(tid: str, txn: Transaction) -> _Writer:
    """A new producer of `tid` (fencing the earlier ones, aborting what they
    left open) and the micro-batch its id last committed. Both clients
    connect to every broker at once (``enable.sparse.connections`` off):
    librdkafka otherwise connects to the transaction coordinator lazily,
    and ``init_transactions`` then waits half a second about every other
    time; its log goes nowhere (`_LOG`), since every error it reports
    reaches the task as an exception."""
    kafka = client()
    config = {"enable.sparse.connections": False, **dict(txn.config), "logger": _LOG}
    producer = kafka.Producer({**config, "transactional.id": tid})
    producer.init_transactions(CALL_TIMEOUT_S)
    consumer = kafka.Consumer({**config, "group.id": tid, "enable.auto.commit": False,
                               "isolation.level": "read_committed"})
    return _Writer(producer, consumer, committed_batch(consumer, txn.topic))


def _begin(tid: str, txn: Transaction) -> _Writer | None:
    """The writer of `tid` inside a transaction holding this micro-batch's
    marker, or None when its id already committed this micro-batch: the
    kept one, unless another producer of its id fenced it since; else a new
    one. Raises KafkaException when a new one cannot begin."""
    key = (tid, txn.config)
    kept = _KEPT.pop(key, None)
    if kept is not None:
        try:
            return _enter(key, kept, txn)
        except client().KafkaException:
            _close(kept)  # fenced: a new producer reads the marker again
    writer = _start(tid, txn)
    try:
        return _enter(key, writer, txn)
    except BaseException:
        _close(writer)
        raise


def _enter(key: tuple[str, tuple[tuple[str, str], ...]], writer: _Writer, txn: Transaction) -> _Writer | None:
    """Begin `writer`'s transaction with the marker first (the coordinator
    answers at once, so a fenced producer fails before any message) and
    keep it for the next micro-batch; None, kept, when its id committed
    this micro-batch already."""
    if writer.done is None or writer.done < txn.batch_id:
        writer.producer.begin_transaction()
        marker = client().TopicPartition(txn.topic, 0, txn.batch_id + 1, f"wid micro-batch {txn.batch_id}")
        writer.producer.send_offsets_to_transaction([marker], writer.consumer.consumer_group_metadata(),
                                                    CALL_TIMEOUT_S)
        _KEPT[key] = writer
        return writer
    _KEPT[key] = writer
    return None


def _produce(writer: _Writer, topic: str, rows: pa.RecordBatch) -> int:
    """Produce `rows` (key, value, headers) in the open transaction. The
    headers are read as two flat lists and sliced per message (a list of
    dicts per message costs as much again as producing it)."""
    produce, poll = writer.producer.produce, writer.producer.poll
    heads = rows.column("headers")
    offsets = heads.offsets.to_pylist()
    flat = heads.flatten()
    pairs = list(zip(flat.field("key").to_pylist(), flat.field("value").to_pylist(), strict=True))
    first = offsets[0]
    for i, (key, value) in enumerate(zip(rows.column("key").to_pylist(), rows.column("value").to_pylist(),
                                         strict=True)):
        headers = pairs[offsets[i] - first:offsets[i + 1] - first] or None
        while True:
            try:
                produce(topic, value=value, key=key, headers=headers)
                break
            except BufferError:  # librdkafka's queue is full: let deliveries drain
                poll(0.05)
    poll(0)
    return int(rows.num_rows)


def _close(writer: _Writer, abort: bool = True) -> None:
    """Forget `writer`: abort its transaction (best effort; a fenced or
    failed producer cannot, and the next producer of its id aborts it)."""
    if abort:  # best effort: init_transactions of the id's next producer aborts it too
        with suppress(Exception):
            writer.producer.abort_transaction(5)
    with suppress(Exception):  # a consumer that never joined a group has nothing to leave
        writer.consumer.close()


def write_partition(txn: Transaction, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: write one writer's messages of one
    micro-batch in one transaction (see the module docstring); yields one
    row (`RESULT`) when the task had messages. Raises SinkError naming the
    topic and Kafka's error, MissingDependencyError without the client."""
    writer: _Writer | None = None
    index, written, skipped = None, 0, False
    try:
        for rows in batches:
            if rows.num_rows == 0 or skipped:
                continue
            if writer is None:
                index = int(rows.column(WRITER)[0].as_py())
                writer = _begin(f"{txn.prefix}-{index}", txn)
                skipped = writer is None
            if writer is not None:
                written += _produce(writer, txn.topic, rows)
        if writer is not None:
            _hook(txn, index, writer)
            writer.producer.commit_transaction(CALL_TIMEOUT_S)
            writer.done = txn.batch_id
            _touch(txn, index, "committed")
    except (_InjectedFailure, MissingDependencyError):
        raise
    except BaseException as err:
        if writer is not None:  # forgotten, so that the retry starts a producer that fences this one
            _KEPT.pop((f"{txn.prefix}-{index}", txn.config), None)
            _close(writer)
        if isinstance(err, client().KafkaException):
            raise SinkError(f"sink error: Kafka topic {txn.topic}, exactly-once writer {index} of micro-batch "
                            f"{txn.batch_id}: {err.args[0].str() if err.args else err}") from None
        raise
    if index is not None:
        yield pa.RecordBatch.from_pydict({"writer": [index], "written": [written], "skipped": [skipped]},
                                         schema=pa.schema([("writer", pa.int32()), ("written", pa.int64()),
                                                           ("skipped", pa.bool_())]))


class _InjectedFailure(RuntimeError):
    """The test hook's one-shot task failure (``fail_batch``)."""


def _hook_settings() -> dict[str, Any]:
    raw = os.environ.get(HOOK)
    return json.loads(raw) if raw else {}


def _touch(txn: Transaction, index: int | None, stage: str) -> None:
    """The test hook's file for this writer's transaction at `stage`."""
    directory = _hook_settings().get("dir")
    if directory:
        Path(directory, f"{stage}-{txn.part}-{txn.batch_id}-{index}").touch()


def _hook(txn: Transaction, index: int | None, writer: _Writer) -> None:
    """The test hook between the last write and the commit (module docstring)."""
    hook = _hook_settings()
    if not hook:
        return
    writer.producer.flush(CALL_TIMEOUT_S)  # the messages are on the broker, in the open transaction
    _touch(txn, index, "open")
    time.sleep(int(hook.get("pause_ms", 0)) / 1000)
    if hook.get("fail_batch") == txn.batch_id and hook.get("fail_part", txn.part) == txn.part:
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.attemptNumber() == 0:
            _KEPT.pop((f"{txn.prefix}-{index}", txn.config), None)
            _ABANDONED.append(writer)  # open and alive, as a killed executor leaves it
            _touch(txn, index, "failed")
            raise _InjectedFailure(f"test hook: writer {index} of micro-batch {txn.batch_id} fails once")


__all__ = ["CALL_TIMEOUT_S", "HOOK", "RESULT", "WRITER", "Transaction", "client", "committed_batch",
           "write_partition"]
