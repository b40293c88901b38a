"""Spark's real-time mode (``[stream] trigger = "real-time"``,
`wid.spec.real_time`): a Window that does not fit is refused at load time
naming the field; one that fits runs as `wid run` (a subprocess, as a user
runs it, stopped by SIGINT) from a real Kafka topic to a Kafka topic, where
the latest message of each window's key equals the batch oracle's window
(the rows arrive in order, so none is late), and undecodable messages
reach the dead-letter topic as they arrived."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyspark
import pytest
from pyspark.sql.streaming.readwriter import DataStreamWriter

from tests.fixtures import COUNT_AND_SUM
from tests.kafka_check import Kafka, Message
from wid.errors import ConfigError
from wid.semantics import evaluate, reasons
from wid.spark.real_time import check_spark, refusal
from wid.spec.toml_io import loads_pipeline

T0 = 1_700_000_000_000  # epoch ms
PIPELINE = """
name = "rt"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{bootstrap}"
schema = "k STRING, v DOUBLE"

[transform.window]
kind = "hopping"
duration_ms = 10000
hop_ms = 5000
group_by = ["k"]
lateness_ms = 5000
emit = "on_update"
max_groups_per_window = 10

""" + COUNT_AND_SUM + """
[stream]
trigger = "real-time"
checkpoint = "ck"

[target]
kind = "kafka"
topic = "{out}"
bootstrap_servers = "{bootstrap}"

[dead_letter]
kind = "kafka"
topic = "{dlq}"
bootstrap_servers = "{bootstrap}"

[spark]
master = "local[4]"
conf = {{ "spark.sql.shuffle.partitions" = "1" }}
"""
FITS = PIPELINE.format(topic="in", out="out", dlq="dlq", bootstrap="h:1")


@pytest.mark.parametrize(("change", "field"), [
    (lambda t: t.replace('kind = "hopping"\nduration_ms = 10000\nhop_ms = 5000',
                         'kind = "session"\ngap_ms = 1000'), "transform.window.kind"),
    (lambda t: t.replace('emit = "on_update"', 'emit = "on_update"\nlate_data = "dlq"'), "transform.window.late_data"),
    (lambda t: t.replace('emit = "on_update"', 'emit = "on_close"'), "transform.window.emit"),
    (lambda t: t.replace('emit = "on_update"', 'emit = "on_update"\nsource_idleness_ms = 1000'),
     "transform.window.source_idleness_ms"),
    (lambda t: t.replace('agg = "sum"', 'agg = "std"'), "transform.window.aggregations[1].agg"),
    (lambda t: t.replace('emit = "on_update"', 'emit = "on_update"\ntime_zone = "UTC"'), "transform.window.time_zone"),
    (lambda t: t.replace('[target]\nkind = "kafka"\ntopic = "out"\nbootstrap_servers = "h:1"',
                         '[target]\nkind = "sqlite"\npath = "o.sqlite"\ntable = "w"'), "target.kind"),
])
def test_a_window_that_does_not_fit_is_refused_naming_the_field(change: Callable[[str], str], field: str) -> None:
    assert loads_pipeline(FITS).stream.spark_trigger() == {"realTime": "5 minutes"}
    with pytest.raises(ConfigError) as refused:
        loads_pipeline(change(FITS))
    assert refused.value.field == field and "real-time mode" in str(refused.value)


def clicks(n: int) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """n clicks in event-time order, 150 ms apart, and two undecodable messages."""
    good = [(0, T0 + 150 * i, f"u{i}".encode(), json.dumps({"k": "ab"[i % 2], "v": float(i % 7)}).encode())
            for i in range(n)]
    return [*good[:n // 2], (0, T0 + 75 * n, b"bad", b"{not json"), *good[n // 2:], (0, T0 + 150 * n, None, b"\xff")]


def wait_for(read: Callable[[], list[Message]], enough: Callable[[list[Message]], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not enough(read()):
        if time.monotonic() > deadline:
            raise TimeoutError("the real-time query did not write what was expected in time")
        time.sleep(2)


@pytest.mark.parametrize(("version", "has_trigger", "refused"), [
    ("4.0.5", False, True), ("4.1.4", False, True), ("4.2.1", True, True),  # stateless real-time mode only
    ("4.3.0", False, True),  # a 4.3 server, but a client whose writer has no realTime trigger
    ("4.3.0", True, False), ("4.4.1", True, False),
])
def test_a_spark_without_real_time_aggregation_is_refused(version: str, has_trigger: bool, refused: bool) -> None:
    why = refusal(version, has_trigger)
    assert (why is not None) == refused
    if why is not None and not version.startswith("4.3"):
        assert "Spark 4.3" in why and version in why


def test_the_session_s_spark_decides_and_the_error_names_the_trigger() -> None:
    old = SimpleNamespace(sparkSession=SimpleNamespace(version="4.2.1"))
    with pytest.raises(ConfigError) as refused:
        check_spark(old)  # type: ignore[arg-type]
    assert refused.value.field == "stream.trigger" and "4.3" in str(refused.value)
    assert "pyspark>=4.3" in (refused.value.fix or "")


def run_wid(tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "wid.cli", "run", "--quiet", "pipeline.toml"], cwd=tmp_path,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_real_time_mode_runs_a_hopping_window_from_kafka_to_kafka(kafka: Kafka, tmp_path: Path) -> None:
    """As the module says; on a Spark whose real-time mode runs no
    aggregation, `wid run` refuses the pipeline before starting a query,
    naming the trigger, and writes nothing."""
    topic, out, dlq = kafka.topic("rt-in"), kafka.topic("rt-out"), kafka.topic("rt-dlq")
    msgs = clicks(120)
    kafka.produce(topic, msgs)
    text = PIPELINE.format(topic=topic, out=out, dlq=dlq, bootstrap=kafka.bootstrap)
    (tmp_path / "pipeline.toml").write_text(text)
    if refusal(pyspark.__version__, "realTime" in inspect.signature(DataStreamWriter.trigger).parameters):
        proc = run_wid(tmp_path)
        output, _ = proc.communicate(timeout=300)
        assert proc.returncode == 2 and "stream.trigger" in output and "Spark 4.3" in output, output[-3000:]
        assert kafka.read(out) == [] and kafka.read(dlq) == []
        return
    spec = loads_pipeline(text)
    rows = [{**json.loads(v or b""), "_event_ts": datetime.fromtimestamp(ts / 1000, UTC)}
            for _, ts, k, v in msgs if k not in (b"bad", None)]
    want = {(r["window_start"], r["k"]): (r["n"], r["total"]) for r in evaluate(rows, spec.window).rows}

    def latest(messages: list[Message]) -> dict[tuple[int, str], tuple[Any, Any]]:
        values = {m.key: json.loads(m.value or b"") for m in messages}
        return {(_us(v["window_start"]), v["k"]): (v["n"], v["total"]) for v in values.values()}

    proc = run_wid(tmp_path)
    try:
        wait_for(lambda: kafka.read(out), lambda got: latest(got) == want or proc.poll() is not None, 180)
        wait_for(lambda: kafka.read(dlq), lambda got: len(got) >= 2 or proc.poll() is not None, 60)
    finally:
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, output[-3000:]  # stopped by SIGINT, as wid run reports it
    assert latest(kafka.read(out)) == want
    dead = kafka.read(dlq)
    assert sorted(((m.key, m.value, m.header("wid.reason")) for m in dead), key=repr) == sorted(
        [(b"bad", b"{not json", reasons.MALFORMED), (None, b"\xff", reasons.MALFORMED)], key=repr)


def _us(text: str) -> int:
    return round(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000)
