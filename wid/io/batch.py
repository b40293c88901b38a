"""Which write a sink receives (`Batch`): every sink takes one, whatever it
writes to, so it lives apart from any one sink."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Batch:
    """Which write a sink receives: the `pipeline`, the micro-batch id (0 for
    a batch run) and, for the first micro-batch of a run, which may replay
    one a crash interrupted, when that micro-batch first started
    (`replay_since_ms`, epoch ms; a Kafka sink then skips what it finds
    already written, `wid.io.kafka.unwritten`), the streaming query's id, the same
    across restarts on one checkpoint (a Delta sink's writes carry it with
    the batch id, and Delta skips a write it already made), and the
    stream's `checkpoint` (with the query's id, the scope of an
    exactly-once Kafka sink's transactional ids, `wid.io.kafka_eos`) and
    how many `writers` such a sink spreads a micro-batch's messages over
    (the shuffle partitions the checkpoint logged; None: the session's)."""

    pipeline: str = "wid"
    batch_id: int | None = 0  # None: no micro-batches (real-time mode)
    replay_since_ms: int | None = None
    query_id: str | None = None  # a stream's (`wid.io.lakehouse.stream_id`): Delta skips a replayed write
    checkpoint: str | None = None  # a stream's; None: a batch run, which resumes nothing
    writers: int | None = None  # an exactly-once Kafka sink's: the stream's logged shuffle partitions


ONE_RUN = Batch()  # a batch run: micro-batch 0, no replay

__all__ = ["ONE_RUN", "Batch"]
