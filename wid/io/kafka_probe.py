"""Checking a pipeline's Kafka brokers and topics before Spark starts.

Spark meets a broker that does not answer, or a topic it cannot write, only
inside the first micro-batch, and says so minutes later in the Kafka
client's words (``Timed out waiting for a node assignment``), never naming
the pipeline's field. `check_kafka` asks first, each question bounded by
`PROBE_S` seconds:

1. Does a broker answer? A TCP connection to each of the bootstrap servers
   of every Kafka source, target and dead letter (the standard library:
   no Kafka client needed).
2. With the Kafka client of the ``kafka`` extra (confluent-kafka): does
   each topic the pipeline names exist, or will the broker create it
   (``auto.create.topics.enable``)? And is the dead letter's topic not
   compacted? Kafka refuses a message without a key on a compacted topic
   (a dead letter from a file has none), and compaction would keep only
   the last of the dead letters that share a key. A subscription pattern
   names no topic; a pipeline whose Kafka options set a security protocol
   other than PLAINTEXT (SASL, SSL) gets the first question only, as its
   credentials are Java client settings that the Python client does not
   read.

Under Spark Connect the server, not this client, talks to Kafka, and
may reach brokers this machine cannot: nothing is probed
(`wid.pipelines.read.session_for`).
"""

from __future__ import annotations

import importlib.util
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from wid.errors import ConfigError
from wid.io.kafka import reader_options, writer_options
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec

PROBE_S = 5.0  # seconds each question may take
SERVERS = "kafka.bootstrap.servers"


@dataclass(frozen=True)
class Use:
    """One use of Kafka by a pipeline: its `role` (``source``, ``target``,
    ``dead_letter``: the TOML table), its brokers, the topics it names and
    its Spark options."""

    role: str
    servers: str
    topics: tuple[str, ...]
    options: Mapping[str, str]

    @property
    def plaintext(self) -> bool:
        """Whether its brokers take PLAINTEXT connections (no SASL, no SSL)."""
        return self.options.get("kafka.security.protocol", "PLAINTEXT").upper() == "PLAINTEXT"


def uses(spec: PipelineSpec | JoinPipelineSpec) -> Iterator[Use]:
    """Each Kafka source, target and dead letter of `spec`."""
    for s in spec.sources:
        if s.format == "kafka":
            options = reader_options(s)
            topics = (s.topic,) if s.topic else tuple(s.topics or ())
            yield Use("source", options.get(SERVERS, ""), topics, options)
    for role, sink in (("target", spec.target), ("dead_letter", spec.dead_letter)):
        if sink.kind == "kafka":
            options = writer_options(sink)
            yield Use(role, options.get(SERVERS, ""), (sink.topic,) if sink.topic else (), options)


def check_kafka(spec: PipelineSpec | JoinPipelineSpec, timeout_s: float = PROBE_S) -> None:
    """Check every Kafka use of `spec` (see the module docstring). Raises
    ConfigError naming the field: ``<role>.bootstrap_servers`` when no
    broker answers, ``<role>.topic`` for a topic that does not exist and
    will not be created, ``dead_letter.topic`` for a compacted one."""
    for use in uses(spec):
        answers(use, timeout_s)
        if use.plaintext and importlib.util.find_spec("confluent_kafka") is not None:
            check_topics(use, timeout_s)


def _host_port(server: str) -> tuple[str, int] | None:
    """``host:port`` (a listener name such as ``PLAINTEXT://`` left out) as a pair."""
    bare = server.strip().split("://")[-1]
    host, _, port = bare.rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


def answers(use: Use, timeout_s: float = PROBE_S) -> None:
    """Raise ConfigError naming ``<role>.bootstrap_servers`` unless one of
    `use`'s bootstrap servers accepts a TCP connection within `timeout_s`."""
    failures = []
    for server in use.servers.split(","):
        address = _host_port(server)
        if address is None:
            failures.append(f"{server.strip()!r} is not host:port")
            continue
        try:
            with socket.create_connection(address, timeout=timeout_s):
                return
        except OSError as err:
            failures.append(f"{server.strip()}: {err.strerror or type(err).__name__}")
    raise ConfigError(f"{use.role}.bootstrap_servers", f"no Kafka broker answers ({'; '.join(failures)})",
                      "start the broker, or give the host:port it listens on")


def check_topics(use: Use, timeout_s: float = PROBE_S) -> None:
    """Raise ConfigError naming ``<role>.topic`` for a topic of `use` that
    does not exist on a broker that creates none, or for a compacted
    dead-letter topic (the Kafka client of the ``kafka`` extra)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": use.servers, "socket.timeout.ms": int(timeout_s * 1000)})
    try:
        found = admin.list_topics(timeout=timeout_s)
    except KafkaException as err:
        raise ConfigError(f"{use.role}.bootstrap_servers", f"{use.servers} answers, but not as a Kafka broker "
                          f"within {timeout_s:g} s ({err.args[0]})", "give the host:port of a Kafka broker") from None
    missing = [t for t in use.topics if t not in found.topics]
    if missing and not _creates_topics(admin, found, timeout_s):
        raise ConfigError(f"{use.role}.topic", f"topic {missing[0]!r} does not exist on {use.servers}, and the "
                          "broker creates none (auto.create.topics.enable = false)",
                          f"create it (kafka-topics.sh --create --topic {missing[0]}), or correct the name")
    if use.role == "dead_letter" and use.topics and use.topics[0] in found.topics:
        policy = _topic_config(admin, use.topics[0], "cleanup.policy", timeout_s) or ""
        if "compact" in policy:
            raise ConfigError("dead_letter.topic", f"topic {use.topics[0]!r} is compacted (cleanup.policy = "
                              f"{policy}): Kafka refuses a dead letter without a key (a row from a file has none), "
                              "and compaction keeps only the last dead letter of each key",
                              "give the dead letter a topic with cleanup.policy = delete")


def _creates_topics(admin: Any, found: Any, timeout_s: float) -> bool:
    """Whether the broker creates a topic a client names
    (``auto.create.topics.enable``; Kafka's default is true)."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    broker = str(next(iter(found.brokers)))
    resource = ConfigResource(ResourceType.BROKER, broker)
    configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
    entry = configs.get("auto.create.topics.enable")
    return entry is None or str(entry.value).lower() == "true"


def _topic_config(admin: Any, topic: str, name: str, timeout_s: float) -> str | None:
    from confluent_kafka.admin import ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(timeout_s)
    entry = configs.get(name)
    return None if entry is None else str(entry.value)


__all__ = ["PROBE_S", "Use", "answers", "check_kafka", "check_topics", "uses"]
