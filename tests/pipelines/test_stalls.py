"""A stream whose micro-batch cannot finish: a Kafka source whose broker
stops answering after the check before Spark starts passed (here: no
broker listens, and that check, `wid.io.kafka_probe`, tested in
tests/test_environment.py, is passed over). The run says so while it waits (the micro-batch, Spark's
own status message, the brokers); one Ctrl-C waits for that micro-batch,
a second one stops the stream at once, nothing committed.

The signals are sent to this process from a helper thread while the run
follows its query on the main thread (where wid's SIGINT handler is); a
deadline stops the query if the run never reacts, so that a regression
fails the test instead of hanging it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import pipeline_toml
from tools.services import free_port
from wid.pipelines.run import run
from wid.spec.toml_io import loads_pipeline

DEADLINE_S = 240


def kafka_pipeline(root: Path, port: int) -> Any:
    text = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="stalled").replace(
        'format = "json"\npath = "land"\nstream = true\nschema = "k STRING, ts LONG, v DOUBLE"\n'
        'options = { maxFilesPerTrigger = "1" }',
        f'format = "kafka"\ntopic = "clicks"\nbootstrap_servers = "127.0.0.1:{port}"\nschema = "k STRING, v DOUBLE"\n'
        # each try to reach the broker; a stop waits for the one under way
        'options = { "kafka.request.timeout.ms" = "10000", "kafka.default.api.timeout.ms" = "20000" }')
    text = text.replace('event_time_column = "ts"\nevent_time_unit = "ms"\n', "")
    return loads_pipeline(text + '\n[stream]\ntrigger = "1 second"\n', base_dir=str(root))


def test_a_stalled_micro_batch_is_named_and_a_second_ctrl_c_stops_it(spark: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()  # nothing listens there
    monkeypatch.setattr("wid.pipelines.run.check_before_spark", lambda spec: None)  # the broker went after it
    spec = kafka_pipeline(tmp_path, port)
    assert spec.sources[0].format == "kafka"
    notices: list[str] = []
    stalled = threading.Event()
    seen: dict[str, bool] = {}

    def on_notice(line: str) -> None:
        notices.append(line)
        if "has been running for" in line:
            stalled.set()

    def interrupt() -> None:
        if not stalled.wait(DEADLINE_S):
            return
        os.kill(os.getpid(), signal.SIGINT)  # once: wid waits for the running micro-batch
        time.sleep(3)
        seen["running after one Ctrl-C"] = bool(spark.streams.active)
        if seen.get("returned"):  # no handler of wid's to take it
            return
        os.kill(os.getpid(), signal.SIGINT)  # twice: stop now

    def deadline() -> None:
        end = time.monotonic() + DEADLINE_S + 60
        while time.monotonic() < end and not seen.get("returned"):
            time.sleep(0.5)
        for query in spark.streams.active if not seen.get("returned") else []:
            query.stop()
    helpers = [threading.Thread(target=interrupt, daemon=True), threading.Thread(target=deadline, daemon=True)]
    for helper in helpers:
        helper.start()
    try:
        report = run(spec, spark, on_notice=on_notice, stall_notice_s=2)
    finally:
        seen["returned"] = True
    helpers[0].join(30)
    stall = [line for line in notices if "has been running for" in line]
    assert stall, notices
    assert stall[0].startswith("the run's first micro-batch has been running for"), stall
    assert "Spark's status: Getting offsets from KafkaV2[Subscribe[clicks]]" in stall[0], stall
    assert f"Kafka brokers: source 127.0.0.1:{port}" in stall[0], stall
    assert seen["running after one Ctrl-C"] and report.interrupted and report.batches == []
    assert any(line.startswith("Ctrl-C: the stream stops after the run's first micro-batch") for line in notices)
    assert not (tmp_path / "stalled.checkpoint" / "commits").exists() or \
        not any((tmp_path / "stalled.checkpoint" / "commits").iterdir())
    end = time.monotonic() + 60  # the stop a second Ctrl-C asked for ends by itself
    while spark.streams.active and time.monotonic() < end:
        time.sleep(0.5)
    assert not spark.streams.active
