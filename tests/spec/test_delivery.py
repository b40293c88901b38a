"""`delivery` on a Kafka sink (`wid.spec.delivery`): checked when the
pipeline is declared, kept through a TOML round trip, refused where it
cannot be honoured, and what `wid explain` says a consumer of the topic
sees under each mode."""

from __future__ import annotations

import pytest

from wid.errors import ConfigError
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import dumps_pipeline, loads_pipeline

KAFKA_PIPELINE = """
name = "clicks"

[source]
format = "kafka"
topic = "clicks"
bootstrap_servers = "h:9092"
schema = "k STRING"

[transform.window]
kind = "tumbling"
duration_ms = 10000
group_by = ["k"]
max_groups_per_window = 100
{window}

[[transform.window.aggregations]]
agg = "count"
as = "n"

[stream]
trigger = "{trigger}"

[target]
kind = "kafka"
topic = "windows"
bootstrap_servers = "h:9092"
{target}

[dead_letter]
kind = "kafka"
topic = "dead"
bootstrap_servers = "h:9092"
delivery = "exactly-once"
"""


def pipeline(target: str = 'delivery = "exactly-once"', window: str = "", trigger: str = "1 second") -> str:
    return KAFKA_PIPELINE.format(target=target, window=window, trigger=trigger)


def test_delivery_is_kept_and_defaults_to_at_least_once() -> None:
    spec = loads_pipeline(pipeline())
    assert (spec.target.delivery, spec.dead_letter.delivery) == ("exactly-once", "exactly-once")
    assert loads_pipeline(dumps_pipeline(spec)) == spec
    assert loads_pipeline(pipeline(target="")).target.delivery == "at-least-once"
    assert SinkSpec("sqlite", path="x.sqlite", table="t").delivery == "at-least-once"


def test_delivery_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"target\.delivery: must be one of at-least-once, exactly-once"):
        loads_pipeline(pipeline(target='delivery = "exactly_once"'))
    with pytest.raises(ConfigError, match="delivery: kind = 'sqlite' has no delivery modes.*Fix: remove delivery"):
        SinkSpec("sqlite", path="x.sqlite", table="t", delivery="exactly-once")


def test_real_time_mode_refuses_exactly_once() -> None:
    real_time = 'emit = "on_update"'
    with pytest.raises(ConfigError, match=r"target\.delivery: Spark's real-time mode .* no transactions"):
        loads_pipeline(pipeline(window=real_time, trigger="real-time"))
    with pytest.raises(ConfigError, match=r"dead_letter\.delivery"):
        loads_pipeline(pipeline(target="", window=real_time, trigger="real-time"))


def test_crash_recovery_kafka_eos_points_at_delivery() -> None:
    with pytest.raises(ConfigError, match="no transactions.*delivery = 'exactly-once'"):
        loads_pipeline(pipeline(window='crash_recovery = "kafka_eos"'))


def test_explain_says_what_a_consumer_sees_under_each_delivery() -> None:
    from wid.spark.explain import outline

    exactly = outline(loads_pipeline(pipeline(window='emit = "on_update"'))).warnings
    target = next(w for w in exactly if w.startswith("target is Kafka topic windows"))
    assert "read_committed sees each version of a window exactly once" in target
    assert "several messages under its key, each once" in target and "aborted" in target
    dead = next(w for w in exactly if w.startswith("dead_letter is Kafka topic dead"))
    assert "sees each dead letter exactly once" in dead and "version" not in dead

    at_least = outline(loads_pipeline(pipeline(target=""))).warnings
    target = next(w for w in at_least if w.startswith("target is Kafka topic windows"))
    assert "a Spark task retried inside a micro-batch writes its messages again" in target
    assert 'set delivery = "exactly-once"' in target and "earlier versions" not in target
    reopen = 'lateness_ms = 1000\nlate_data = "reopen"\nallowed_lateness_ms = 5000'
    target = next(w for w in outline(loads_pipeline(pipeline(target="", window=reopen))).warnings
                  if w.startswith("target is Kafka"))
    assert "each window's earlier versions" in target
