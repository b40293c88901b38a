"""Exactly-once delivery to Kafka through crashes (`tests.kafka_crash`):
`wid run` killed with SIGKILL inside a writer's open transaction and after
a committed micro-batch, then a Spark task failing once inside a
micro-batch and retried; a read_committed consumer of the window and
dead-letter topics then sees exactly the streaming oracle's windows (each
version once, and each retraction once: session windows with ``emit =
"on_update"``) and dead letters, while a
read_uncommitted consumer sees the aborted copies too.
``python -m benchmarks.crash_recovery --sink kafka --runs 30`` does it 30
times at random moments."""

from __future__ import annotations

from pathlib import Path

from tests.kafka_check import Kafka
from tests.kafka_crash import EXTENTS, Kill, crash_run


def test_killed_inside_a_transaction_and_after_a_commit_and_a_task_retried(kafka: Kafka, tmp_path: Path) -> None:
    kills = [Kill("in-transaction", 1), Kill("after-commit", 3)]
    result = crash_run(kafka, tmp_path, seed=11, kills=kills, fail_batch=5, extent=EXTENTS["session on_update"])
    assert result["landed"] == result["aimed"], result
    assert result["task_failed"] and result["identity_holds"], result
    assert result["windows_equal"] and result["dead_equal"], result
    assert result["aborted_copies"] > 0, result  # read_uncommitted sees what read_committed must not
    assert result["oracle_windows"] > 0 and result["retractions"] > 0 and result["dead"] > 0, result
    assert result["batches"] > 6, result
