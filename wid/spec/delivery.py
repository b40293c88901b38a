"""How a Kafka sink delivers its messages (`delivery` on a Kafka target or
dead letter), checked when the pipeline is declared, and what a consumer of
the topic sees under each mode (`consumer_view`, which `wid explain`
prints).

- ``at-least-once`` (the default): Spark's Kafka writer. A micro-batch
  replayed after a crash skips the messages it finds already written
  (`wid.io.kafka.unwritten`), but a Spark task retried inside a micro-batch
  writes its messages again: Spark's writer has no transactions.
- ``exactly-once``: Kafka transactions (`wid.io.kafka_eos`), one per
  micro-batch and writer task, with the micro-batch id committed in the
  same transaction; a consumer reading with ``isolation.level =
  read_committed`` sees every message once, through any crash or retry.

Other sinks need no such choice: they are keyed by the natural key (an
upsert, a ``MERGE``), so a replayed write overwrites itself
(docs/semantics.md#natural-keys). Spark's real-time mode writes with
Spark's own Kafka writer, so it has at-least-once delivery only.
"""

from __future__ import annotations

from wid.errors import ConfigError

AT_LEAST_ONCE, EXACTLY_ONCE = "at-least-once", "exactly-once"
DELIVERIES = (AT_LEAST_ONCE, EXACTLY_ONCE)


def check_delivery(kind: str, delivery: object) -> None:
    """`delivery` of a sink of `kind`: one of `DELIVERIES`, and
    ``exactly-once`` only on Kafka. Raises ConfigError naming ``delivery``."""
    if delivery not in DELIVERIES:
        raise ConfigError("delivery", f"must be one of {', '.join(DELIVERIES)}, got {delivery!r}")
    if delivery == EXACTLY_ONCE and kind != "kafka":
        raise ConfigError("delivery", f"kind = '{kind}' has no delivery modes: only a Kafka sink takes "
                          "delivery = 'exactly-once' (this sink is keyed by the natural key, so a replayed "
                          "write overwrites itself)", "remove delivery")


def check_real_time(target_delivery: str, dead_letter_delivery: str) -> None:
    """Spark's real-time mode writes with Spark's Kafka writer, which has no
    transactions: raise ConfigError naming the sink that asks for
    ``exactly-once``."""
    for role, delivery in (("target", target_delivery), ("dead_letter", dead_letter_delivery)):
        if delivery == EXACTLY_ONCE:
            raise ConfigError(f"{role}.delivery", "Spark's real-time mode writes with Spark's Kafka writer, which "
                              "has no transactions", "use delivery = 'at-least-once', or a micro-batch trigger "
                              "such as trigger = '1 second'")


def consumer_view(role: str, topic: str, delivery: str, versions: bool) -> str:
    """What a consumer of Kafka topic `topic`, written as `role` (``target``
    or ``dead_letter``) with `delivery`, sees; `versions` says that a
    window is written several times (``emit = "on_update"``, or ``reopen``
    correcting a window after late rows)."""
    what = "dead letter" if role == "dead_letter" else ("version of a window" if versions else "window")
    if delivery == EXACTLY_ONCE:
        many = ("; a window's versions (on_update, reopen) are several messages under its key, each once, "
                "in micro-batch order" if versions else "")
        return (f"{role} is Kafka topic {topic}, delivery = \"exactly-once\": each micro-batch's messages are "
                f"written in Kafka transactions, so a consumer with isolation.level = read_committed sees each "
                f"{what} exactly once, through crashes and task retries{many}; a read_uncommitted consumer "
                "(Kafka's default) may also see the copies of aborted transactions, and a read_committed one "
                "waits for a transaction a crash left open until the restart aborts it (or transaction.timeout.ms)")
    many = ", and each window's earlier versions" if versions else ""
    return (f"{role} is Kafka topic {topic}, delivery = \"at-least-once\": a replayed micro-batch skips the "
            "messages it finds already written, but a Spark task retried inside a micro-batch writes its "
            f"messages again (Spark's Kafka writer has no transactions); a consumer of a non-compacted topic "
            f"may see such copies{many}: read it compacted, keep the latest message per key, or set "
            "delivery = \"exactly-once\"")


__all__ = ["AT_LEAST_ONCE", "DELIVERIES", "EXACTLY_ONCE", "check_delivery", "check_real_time", "consumer_view"]
