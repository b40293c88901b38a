"""A local Apache Kafka broker for development, demos and tests.

One KRaft node (broker and controller in one process, no ZooKeeper, no
Docker) on 127.0.0.1, run from the ``org.apache.kafka:kafka_2.13`` jars,
which Maven fetches once into ``~/.cache/wid/kafka-<version>/lib``
(`tools/kafka/pom.xml`). It needs Java 17+ and Maven.

    python -m tools.kafka_broker start            # prints the bootstrap servers once the broker is ready
    python -m tools.kafka_broker stop

`start` keeps the broker's data and pid in ``--dir`` (default
``.kafka`` in the working directory) and returns when the broker says it
has started; `stop` ends it by its pid. The test suite starts one broker
per session the same way (`tests/kafka_check.py`).

The settings suit one machine and test data: one replica of everything,
no retention by time or size (test topics carry event times years old,
which time-based retention would delete at once), topics created on first
use.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.services import ServiceError, free_port, launch, read_pids, stop_pid

HERE = Path(__file__).resolve().parent / "kafka"
VERSION = "4.4.0"  # tools/kafka/pom.xml's kafka.version
READY = "Kafka Server started"
JVM = ["-Xms128m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true"]


class BrokerError(ServiceError):
    """The broker could not be fetched or started; the message says why and how to fix it."""


def jars(cache: Path | None = None) -> Path:
    """The broker's lib directory, fetched by Maven on first use. Raises
    BrokerError naming Java or Maven when either is missing."""
    for tool, fix in (("java", "install a Java 17+ runtime (apt-get install openjdk-17-jre-headless)"),
                      ("mvn", "install Maven (apt-get install maven)")):
        if shutil.which(tool) is None:
            raise BrokerError(f"{tool} is not on PATH: {fix}")
    lib = (cache or Path.home() / ".cache" / "wid" / f"kafka-{VERSION}") / "lib"
    if not (lib / f"kafka_2.13-{VERSION}.jar").exists():
        lib.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["mvn", "-B", "-q", "-f", str(HERE / "pom.xml"), "dependency:copy-dependencies",
                               f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise BrokerError(f"Maven could not fetch kafka_2.13 {VERSION}: {(done.stdout + done.stderr)[-2000:]}")
    return lib


@dataclass(frozen=True)
class Broker:
    """A running broker: its `directory` (data, log, pid) and ports."""

    directory: Path
    port: int
    controller_port: int
    pid: int

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"


def properties(directory: Path, port: int, controller_port: int, settings: Mapping[str, str] | None = None) -> str:
    """``server.properties`` of a one-node KRaft cluster on 127.0.0.1, with
    `settings` over the defaults below (a test's broker that refuses what
    this one allows: transactions, topics created on first use)."""
    settings = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(directory / "data"), "num.partitions": "1", "default.replication.factor": "1",
        "auto.create.topics.enable": "true", "delete.topic.enable": "true",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0", "num.network.threads": "2", "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1", "background.threads": "2",
        "log.segment.bytes": "1048576",  # the smallest Kafka 4 accepts
        "log.retention.ms": "-1", "log.retention.bytes": "-1",
        **(settings or {}),
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _java(lib: Path, *args: str) -> list[str]:
    return ["java", *JVM, f"-Dlog4j2.configurationFile={HERE / 'log4j2.properties'}", "-cp", f"{lib}/*", *args]


def start(directory: Path, port: int = 0, timeout_s: float = 120, settings: Mapping[str, str] | None = None) -> Broker:
    """Format `directory` (first use) and start a broker there on `port` (0:
    a free one), with `settings` over `properties`' defaults; returns once
    it is ready. Raises BrokerError with the broker's log when it dies or is
    not ready within `timeout_s`."""
    lib = jars()
    directory.mkdir(parents=True, exist_ok=True)
    port, controller = port or free_port(), free_port()
    config = directory / "server.properties"
    config.write_text(properties(directory, port, controller, settings))
    if not (directory / "data" / "meta.properties").exists():
        cluster = subprocess.run(_java(lib, "kafka.tools.StorageTool", "random-uuid"), capture_output=True,
                                 text=True, check=True).stdout.strip().splitlines()[-1]
        subprocess.run(_java(lib, "kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(config),
                             "--standalone"), capture_output=True, check=True)
    try:
        pid = launch(_java(lib, "kafka.Kafka", str(config)), directory / "broker.log", READY, what="the Kafka broker",
                     timeout_s=timeout_s)
    except ServiceError as err:
        raise BrokerError(str(err)) from None
    (directory / "broker.pid").write_text(f"{pid} {port} {controller}\n")
    return Broker(directory, port, controller, pid)


def running(directory: Path) -> Broker | None:
    """The broker started in `directory`, if its process is alive."""
    if not read_pids(directory / "broker.pid"):
        return None
    pid, port, controller = map(int, (directory / "broker.pid").read_text().split())
    return Broker(directory, port, controller, pid)


def stop(broker: Broker, timeout_s: float = 30) -> None:
    """End the broker: SIGTERM (a controlled shutdown), SIGKILL after `timeout_s`."""
    stop_pid(broker.pid, timeout_s)
    (broker.directory / "broker.pid").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A local Kafka broker on 127.0.0.1 (KRaft, one node).")
    parser.add_argument("action", choices=["fetch", "start", "stop"])
    parser.add_argument("--dir", type=Path, default=Path(".kafka"), help="data, log and pid (default .kafka)")
    parser.add_argument("--port", type=int, default=9092, help="the client port (default 9092)")
    args = parser.parse_args(argv)
    try:
        if args.action == "fetch":
            print(jars())
        elif args.action == "start":
            print((running(args.dir) or start(args.dir.resolve(), args.port)).bootstrap_servers)
        elif (found := running(args.dir)) is not None:
            stop(found)
    except BrokerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
