"""Crash recovery of exactly-once delivery to Kafka, against a real broker:
`wid run` (a subprocess, as a user runs it) reads a Kafka topic and writes
its windows and dead letters to topics with ``delivery = "exactly-once"``;
it is killed with SIGKILL (its whole process group: the JVM and the Python
workers holding the producers) at a chosen moment, restarted, made to fail
one Spark task inside a micro-batch, and run to the end. A
``read_committed`` consumer's view of both topics must then equal the
streaming oracle's over the micro-batches the checkpoint logged: every
version of every window, and every dead letter, exactly once; a
``read_uncommitted`` consumer must see more (the aborted copies), or the
check would prove nothing.

Kill points, watched on the run's files every millisecond:

- ``in-transaction k``: a writer of micro-batch k has flushed its messages
  into its open transaction and not committed: the test hook
  (`wid.io.kafka_txn`, ``WID_TEST_KAFKA_TXN``) writes ``open-...`` files
  there and pauses before the commit;
- ``in-batch k``: the offset log holds micro-batch k, the commit log not;
- ``after-commit k``: the commit log holds micro-batch k.

After the kill, `landed` reads the files it left and says where it landed.
The task failure is the same hook's ``fail_batch``: the first attempt of
that micro-batch's writers fails after flushing, its transaction left open
(``failed-...`` files), and Spark retries it (``local[2,3]``: 3 attempts).

The stream (`write_stream`): keys ``k0``..``k3`` over 3 partitions in
event-time order with disorder, the third partition 6 s behind the others
(under ``emit = "on_update"`` session windows then merge across
micro-batches, retracting what was written), some rows a minute late, a
few malformed messages; ``maxOffsetsPerTrigger`` makes several
micro-batches.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.crash_harness import killed_when
from tests.fixtures import COUNT_AND_SUM
from tests.kafka_check import (
    Kafka,
    Message,
    Produced,
    micro_batches,
    offset_log,
    oracle_messages,
    produce_rows,
    tombstone_keys,
    window_rows,
)
from tests.sink_check import assert_same_rows
from wid.semantics import reasons
from wid.semantics.stream_oracle import BatchResult, run_stream
from wid.spec.toml_io import load_pipeline

T0 = 1_700_000_000_000
PIPELINE = """
name = "eos"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "k STRING, v DOUBLE"
options = {{ maxOffsetsPerTrigger = "{per_batch}" }}

[transform.window]
{extent}
group_by = ["k"]
lateness_ms = 3000
max_groups_per_window = 100

""" + COUNT_AND_SUM + """
[stream]
checkpoint = "ck"

[spark]
master = "local[2,3]"
conf = {{ "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }}

[target]
kind = "kafka"
topic = "{out}"
bootstrap_servers = "{bootstrap}"
delivery = "exactly-once"

[dead_letter]
kind = "kafka"
topic = "{dlq}"
bootstrap_servers = "{bootstrap}"
delivery = "exactly-once"
"""
EXTENTS = {
    "tumbling dlq": 'kind = "tumbling"\nduration_ms = 10000\nlate_data = "dlq"',
    "hopping reopen": 'kind = "hopping"\nduration_ms = 20000\nhop_ms = 5000\nlate_data = "reopen"\n'
                      "allowed_lateness_ms = 15000",
    "tumbling on_update": 'kind = "tumbling"\nduration_ms = 10000\nemit = "on_update"\nlate_data = "dlq"',
    "session on_update": 'kind = "session"\ngap_ms = 1500\nemit = "on_update"\nlate_data = "dlq"',
}
COLUMNS = ["window_start", "window_end", "k", "n", "total"]
PAUSE_MS = 800  # a transaction's wait before its commit, when a run is to be killed inside one


def payload(value: bytes | None) -> dict[str, Any] | None:
    """A message's source row, or None when it does not decode as one."""
    try:
        row = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) and isinstance(row.get("v"), float) else None


@dataclass(frozen=True)
class Stream:
    """A stream written for a run: its topics and what each message became."""

    topic: str
    out: str
    dlq: str
    produced: Produced


def write_stream(kafka: Kafka, root: Path, rng: random.Random, extent: str, messages: int = 280,
                 per_batch: int = 40) -> Stream:
    """Produce the stream (module docstring) and write the pipeline in `root`."""
    topic, out, dlq = kafka.topic("eos-in", 3), kafka.topic("eos-windows", 2), kafka.topic("eos-dead")
    rows = []
    for i in range(messages):
        ts = T0 + i * 250 + rng.randrange(-2_000, 1) - (60_000 if i > messages // 4 and rng.random() < 0.04 else 0)
        ts -= 6_000 if i % 3 == 2 else 0  # partition 2 runs behind: sessions merge across micro-batches
        value = b"not json %d" % i if rng.random() < 0.01 else json.dumps(
            {"k": f"k{rng.randrange(4)}", "v": float(rng.randrange(100))}).encode()
        rows.append((i % 3, ts, b"m%d" % i, value))
    produced = produce_rows(kafka, topic, rows, payload)
    root.mkdir(parents=True, exist_ok=True)
    (root / "pipeline.toml").write_text(PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, out=out, dlq=dlq,
                                                        extent=extent, per_batch=per_batch))
    return Stream(topic, out, dlq, produced)


@dataclass(frozen=True)
class Kill:
    """Where to kill: `phase` (module docstring) of micro-batch `batch`."""

    phase: str
    batch: int

    def reached(self, root: Path) -> bool:
        ck, txn = root / "ck", root / "txn"
        if self.phase == "in-transaction":
            return any(txn.glob(f"open-*-{self.batch}-*"))
        committed = (ck / "commits" / str(self.batch)).exists()
        return committed if self.phase == "after-commit" else (ck / "offsets" / str(self.batch)).exists() \
            and not committed


def landed(root: Path, batch: int) -> str:
    """Where a kill landed, from the files it left (module docstring)."""
    ck, txn = root / "ck", root / "txn"
    if (ck / "commits" / str(batch)).exists():
        return "after-commit"
    opened = {p.name.removeprefix("open-") for p in txn.glob(f"open-*-{batch}-*")}
    if opened - {p.name.removeprefix("committed-") for p in txn.glob(f"committed-*-{batch}-*")}:
        return "in-transaction"
    return "in-batch" if (ck / "offsets" / str(batch)).exists() else "before the micro-batch"


def _env(root: Path, hook: dict[str, Any]) -> dict[str, str]:
    txn = root / "txn"
    shutil.rmtree(txn, ignore_errors=True)
    txn.mkdir()
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "WID_TEST_KAFKA_TXN": json.dumps(
        {"dir": str(txn), **hook})}


def _command(root: Path) -> list[str]:
    return [sys.executable, "-m", "wid.cli", "run", "--quiet", str(root / "pipeline.toml")]


def kill_at(root: Path, kill: Kill, timeout_s: float = 600) -> str | None:
    """Start `wid run` in `root` and SIGKILL its process group at `kill`;
    returns where it landed, None when the run ended first."""
    hook = {"pause_ms": PAUSE_MS} if kill.phase == "in-transaction" else {}
    if not killed_when(_command(root), root, _env(root, hook), lambda: kill.reached(root), timeout_s):
        return None
    return landed(root, kill.batch)


def finish(root: Path, fail_batch: int | None = None) -> str:
    """Run the pipeline to the end, the first attempt of micro-batch
    `fail_batch`'s writers failing once; returns the run's output. Raises
    with it when the run fails."""
    hook = {} if fail_batch is None else {"fail_batch": fail_batch}
    done = subprocess.run(_command(root), cwd=root, env=_env(root, hook), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"wid run failed in {root}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def dead_positions(results: list[BatchResult], produced: Produced) -> Counter[tuple[str, str, str]]:
    """(partition, offset, reason) of each message the dead letter holds once."""
    out = Counter((str(d.row["_partition"]), str(d.row["_offset"]), d.reason) for r in results
                  for d in [*r.late, *r.rejected])
    out.update((str(p), str(o), reasons.MALFORMED) for (_, p, o), row in produced.items() if not isinstance(row, dict))
    return out


def compare(kafka: Kafka, root: Path, stream: Stream) -> dict[str, Any]:
    """Both topics as read_committed and read_uncommitted consumers see
    them, against the oracle over the logged micro-batches."""
    window = load_pipeline(root / "pipeline.toml").window
    results = run_stream(micro_batches(offset_log(root / "ck"), stream.produced), window)
    views = {level: (kafka.read(stream.out, level), kafka.read(stream.dlq, level))
             for level in ("read_committed", "read_uncommitted")}
    windows, dead = views["read_committed"]
    columns = [*COLUMNS, "is_final"] if window.emit == "on_update" else COLUMNS
    want, retracted = oracle_messages(window, results, columns)
    try:
        assert_same_rows(window, window_rows(windows, columns), want)
        windows_equal = tombstone_keys(windows) == retracted
    except AssertionError:
        windows_equal = False
    got_dead = Counter(_position(m) for m in dead)
    return {"windows_equal": windows_equal, "windows": len(windows), "oracle_windows": len(want),
            "retractions": sum(retracted.values()),
            "dead_equal": got_dead == dead_positions(results, stream.produced), "dead": len(dead),
            "aborted_copies": sum(map(len, views["read_uncommitted"])) - len(windows) - len(dead),
            "batches": len(results)}


def _position(m: Message) -> tuple[str, str, str]:
    return m.header("wid.partition") or "", m.header("wid.offset") or "", m.header("wid.reason") or ""


def crash_run(kafka: Kafka, root: Path, seed: int, kills: list[Kill], fail_batch: int | None,
              extent: str = EXTENTS["tumbling dlq"]) -> dict[str, Any]:
    """Write a stream, kill `wid run` at each of `kills` in turn
    (restarting it each time), run it to the end with a task failure in
    `fail_batch`, and compare; returns `compare`'s counts, where each kill
    landed (None: the run ended first) and whether the task failure
    happened."""
    stream = write_stream(kafka, root, random.Random(seed), extent)
    spots = [kill_at(root, kill) for kill in kills]
    output = finish(root, fail_batch)
    return {**compare(kafka, root, stream), "landed": spots, "aimed": [k.phase for k in kills],
            "task_failed": any((root / "txn").glob("failed-*")), "identity_holds": "holds" in output}
