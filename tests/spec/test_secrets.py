"""Secrets in specs, without Spark: `mask_url` hides the password of every
URL form (a Hypothesis property over generated passwords, checked against
the text the test itself planted) and leaves a URL without one alone;
secret options (`is_secret`) show as ``***`` in reprs and dumps;
`options_env` names variables, read when the options are built, and a
missing one is named with the option and the process that lacks it."""

from __future__ import annotations

import os
import socket
import sys
import types
from collections.abc import Callable
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wid.errors import ConfigError
from wid.spec import Aggregation, Window
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec
from wid.spec.secrets import CONNECT_WRITER, MASK, check_postgres_url, is_secret, mask_url
from wid.spec.toml_io import dumps_pipeline, loads_pipeline

# Printable ASCII but space, and two letters from beyond it: every character a password may hold.
PASSWORD = st.text(st.characters(min_codepoint=33, max_codepoint=126) | st.sampled_from("é€"), min_size=3,
                   max_size=24)


def libpq_quoted(pw: str) -> str:
    return pw.replace("\\", "\\\\").replace("'", "\\'")


# The forms an operator writes a password in: pw -> (the text, the password as written in it).
FORMS: dict[str, Callable[[str], tuple[str, str]]] = {
    "uri": lambda pw: (f"postgresql://wid:{pw}@db.internal:5432/analytics", pw),
    "uri, percent-encoded": lambda pw: (f"postgresql://wid:{quote(pw, safe='')}@db.internal:5432/a", quote(pw, safe="")),
    "one slash": lambda pw: (f"postgresql:/postgres:{pw}@127.0.0.1:53559/postgres", pw),
    "no slash": lambda pw: (f"postgresql:postgres:{pw}@127.0.0.1/postgres", pw),
    "wrong scheme": lambda pw: (f"postgresq://wid:{pw}@127.0.0.1:5432/postgres?sslmode=disable", pw),
    "no scheme": lambda pw: (f"wid:{pw}@db.internal:5432/analytics", pw),
    "query": lambda pw: (f"postgresql://wid@db.internal/a?sslmode=require&password={quote(pw, safe='')}",
                         quote(pw, safe="")),
    "query, raw": lambda pw: (f"postgresql://wid@db.internal/a?password={pw}&connect_timeout=3", pw),
    "sslpassword": lambda pw: (f"postgresql://wid@db.internal/a?sslpassword={quote(pw, safe='')}", quote(pw, safe="")),
    "key=value": lambda pw: (f"host=db.internal user=wid password={pw} dbname=analytics", pw),
    "key=value, quoted": lambda pw: (f"host=db.internal password='{libpq_quoted(pw)} x' dbname=a", libpq_quoted(pw)),
    "key=value, double quotes": lambda pw: (f'host=db.internal password="{pw} x" dbname=a', pw),
}


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(FORMS)), PASSWORD)
def test_mask_url_hides_the_password_of_every_form(form: str, pw: str) -> None:
    assume(not (form == "no scheme" and pw.startswith("//")))  # wid://... reads as a URL of scheme wid (mask_url)
    assume(not (form == "query, raw" and "&" in pw))  # a raw & ends a URL parameter: libpq reads another one
    assume(not (form == "key=value, double quotes" and ('"' in pw or "\\" in pw)))
    assume(MASK not in pw)  # a password of asterisks would read as its own mask
    url, written = FORMS[form](pw)
    shown = [p for p in {pw, written} if p in url]
    for p in shown:
        assume(url.count(p) == 1)  # the password is not also a part of the rest of the text
    masked = mask_url(url)
    assert MASK in masked
    for p in shown:
        assert p not in masked, (url, masked)


SAFE = st.text(st.sampled_from("abcxyz019-._~%"), min_size=1, max_size=8)


@st.composite
def urls_without_password(draw: st.DrawFn) -> str:
    """A PostgreSQL URI or key=value string that holds no password."""
    if draw(st.booleans()):
        pairs = draw(st.lists(st.tuples(st.sampled_from(["host", "port", "dbname", "user", "sslmode", "options",
                                                         "application_name", "sslkey"]),
                                        SAFE | st.just("'a b@c:d'") | st.just("u:v@w")), min_size=1, max_size=5))
        return " ".join(f"{k}={v}" for k, v in pairs)
    user = draw(st.sampled_from(["", "wid@", "a.b-c@", "%40x@"]))
    host = draw(st.sampled_from(["127.0.0.1", "db.internal", "[::1]", "h1:5432,h2:5433", ""]))
    port = draw(st.sampled_from(["", ":5432"]))
    path = draw(st.sampled_from(["", "/", "/analytics"]))
    params = draw(st.lists(st.tuples(st.sampled_from(["sslmode", "application_name", "connect_timeout", "user"]),
                                     SAFE), max_size=3))
    query = "?" + "&".join(f"{k}={v}" for k, v in params) if params else ""
    return f"{draw(st.sampled_from(['postgresql', 'postgres']))}://{user}{host}{port}{path}{query}"


@settings(max_examples=300, deadline=None)
@given(urls_without_password())
def test_mask_url_leaves_a_url_without_password_unchanged(url: str) -> None:
    assert mask_url(url) == url


def test_mask_url_on_the_operator_s_forms() -> None:
    # The message an operator saw with the password in it, then the forms the issue lists.
    assert mask_url("postgresql:/postgres:SECRETenv1@127.0.0.1:53559/postgres") == \
        "postgresql:***@127.0.0.1:53559/postgres"
    assert mask_url("postgresql://u:p@ss:w/rd@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert mask_url("host=h password='it''s' dbname=d") == "host=h password=*** dbname=d"
    assert mask_url("postgresql://h/db?password=x&sslmode=require") == "postgresql://h/db?password=***&sslmode=require"
    assert mask_url("sc://spark:15002/;token=abc;use_ssl=true") == "sc://spark:15002/;token=***"


def test_a_mistyped_url_is_refused_with_its_password_masked() -> None:
    for url in ("postgresql:/postgres:SECRETenv1@127.0.0.1:53559/postgres",
                "postgresql:/u:SECRETenv1@h/db?password=SECRETenv1",  # not key=value pairs, though it holds a =
                "wid:SECRETenv1@127.0.0.1:5432/postgres", "host=h password='SECRETenv1"):
        with pytest.raises(ConfigError) as err:
            check_postgres_url("url", url)
        assert "SECRETenv1" not in str(err.value) and MASK in str(err.value), str(err.value)
    assert check_postgres_url("url", "host=h port=5432 password='a b' dbname=d") == \
        "host=h port=5432 password='a b' dbname=d"


@pytest.mark.parametrize(("name", "secret"), [
    ("kafka.sasl.jaas.config", True), ("kafka.ssl.key.password", True), ("kafka.ssl.keystore.key", True),
    ("kafka.ssl.truststore.password", True), ("kafka.sasl.oauthbearer.client.credentials.client.secret", True),
    ("fs.s3a.access.key", True), ("fs.s3a.session.token", True), ("awsSecretKey", True),
    ("fs.azure.sas.data.acct.blob.core.windows.net", True), ("sslpassword", True),
    ("kafka.bootstrap.servers", False), ("subscribe", False), ("startingOffsets", False), ("header", False),
    ("kafka.security.protocol", False), ("kafka.sasl.mechanism", False), ("maxOffsetsPerTrigger", False),
    ("sslmode", False), ("delta.columnMapping.mode", False),
])
def test_which_options_are_secrets(name: str, secret: bool) -> None:
    assert is_secret(name) is secret


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="wid" password="J4as-Pl4nted";'


def spec_with_inline_secrets() -> PipelineSpec:
    window = Window(kind="tumbling", duration_ms=60_000, event_time_column="_event_ts",
                    aggregations=(Aggregation("count", as_="n"),))
    source = SourceSpec("kafka", topic="clicks", bootstrap_servers="h:9092", schema="k STRING",
                        options={"kafka.sasl.jaas.config": JAAS, "kafka.security.protocol": "SASL_SSL",
                                 "kafka.ssl.truststore.password": "Tru5t-Pl4nted"})
    target = SinkSpec("kafka", topic="windows", bootstrap_servers="h:9092", options={"kafka.sasl.jaas.config": JAAS})
    dead = SinkSpec("postgres", url="postgresql://wid:Pg-Pl4nted@h/db", table="dead_letter")
    return PipelineSpec(name="p", source=source, window=window, target=target, dead_letter=dead,
                        spark={"remote": "sc://spark:15002/;token=T0ken-Pl4nted",
                               "conf": {"spark.hadoop.fs.s3a.secret.key": "S3-Pl4nted", "spark.sql.shuffle.partitions": "4"}})


def test_inline_secrets_show_as_stars_in_reprs_and_dumps() -> None:
    spec = spec_with_inline_secrets()
    shown = [repr(spec), str(spec), repr(spec.source), repr(spec.target), repr(spec.dead_letter), dumps_pipeline(spec)]
    for text in shown:
        for planted in ("J4as-Pl4nted", "Tru5t-Pl4nted", "Pg-Pl4nted", "T0ken-Pl4nted", "S3-Pl4nted"):
            assert planted not in text, text
    dumped = loads_pipeline(dumps_pipeline(spec))
    assert dumped.source.options == {"kafka.sasl.jaas.config": MASK, "kafka.security.protocol": "SASL_SSL",
                                     "kafka.ssl.truststore.password": MASK}
    assert dumped.spark["conf"] == {"spark.hadoop.fs.s3a.secret.key": MASK, "spark.sql.shuffle.partitions": "4"}
    assert "'kafka.security.protocol': 'SASL_SSL'" in repr(spec.source)  # what is no secret stays readable


def test_options_env_round_trips_and_is_read_when_the_options_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    source = SourceSpec("kafka", topic="clicks", schema="k STRING",
                        options_env={"kafka.sasl.jaas.config": "WID_TEST_JAAS",
                                     "kafka.bootstrap.servers": "WID_TEST_BROKERS"})
    spec = PipelineSpec(name="p", source=source, window=spec_with_inline_secrets().window,
                        target=SinkSpec("sqlite", path="o.db", table="t"), dead_letter=SinkSpec("parquet", path="d"))
    assert loads_pipeline(dumps_pipeline(spec)) == spec  # the names travel, and no value
    assert '"kafka.sasl.jaas.config" = "WID_TEST_JAAS"' in dumps_pipeline(spec)
    monkeypatch.setenv("WID_TEST_JAAS", JAAS)
    monkeypatch.setenv("WID_TEST_BROKERS", "b1:9092")
    assert source.spark_options() == {"kafka.sasl.jaas.config": JAAS, "kafka.bootstrap.servers": "b1:9092"}


def test_options_env_is_checked_at_load_time() -> None:
    with pytest.raises(ConfigError, match="given twice"):
        SourceSpec("csv", path="x.csv", options={"a.password": "x"}, options_env={"a.password": "A_PW"})
    with pytest.raises(ConfigError, match="options_env.kafka.sasl.jaas.config: must name an environment variable"):
        SinkSpec("kafka", topic="t", bootstrap_servers="h:1", options_env={"kafka.sasl.jaas.config": "not a name"})
    with pytest.raises(ConfigError) as err:
        SourceSpec("csv", path="x.csv", options={"kafka.ssl.key.password": ["Pl4nted"]})
    assert "Pl4nted" not in str(err.value)


def test_a_missing_variable_names_itself_its_option_and_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WID_TEST_UNSET", raising=False)
    sink = SinkSpec("kafka", topic="t", bootstrap_servers="h:1", options_env={"kafka.sasl.jaas.config": "WID_TEST_UNSET"})
    with pytest.raises(ConfigError) as err:
        sink.spark_options()
    message = str(err.value)
    assert "WID_TEST_UNSET" in message and "kafka.sasl.jaas.config" in message and "\n" not in message
    assert f"this process (pid {os.getpid()}, host {socket.gethostname()})" in message
    assert "Spark Connect" in message  # where else a stream's sink reads it

    pg = SinkSpec("postgres", url_env="WID_TEST_UNSET", table="t")
    # Spark Connect's server runs a stream's writer in a Python process of its own: the message says so.
    worker = types.ModuleType("__main__")
    worker.__spec__ = types.SimpleNamespace(name=CONNECT_WRITER)  # type: ignore[assignment]
    monkeypatch.setitem(sys.modules, "__main__", worker)
    with pytest.raises(ConfigError) as err:
        pg.connection_url()
    message = str(err.value)
    assert message.startswith("url_env: environment variable WID_TEST_UNSET is not set in the Spark Connect "
                              "server's stream writer (pid ") and "server's environment" in message, message


def test_a_path_holding_a_password_is_masked_in_messages() -> None:
    with pytest.raises(ConfigError) as err:
        SinkSpec("sqlite", path="s3a://AKIA:Pl4nted@bucket/x.sqlite", table="t")
    assert "Pl4nted" not in str(err.value) and "s3a://AKIA:***@bucket/x.sqlite" in str(err.value)
    with pytest.raises(ConfigError) as err:
        PipelineSpec(name="p", source=SourceSpec("csv", path="x.csv"), window=spec_with_inline_secrets().window,
                     target=SinkSpec("parquet", path="s3a://AKIA:Pl4nted@b/w"), dead_letter=SinkSpec("parquet", path="d"),
                     spark={"master": "sc://spark:15002/;token=Pl4nted"})
    assert "Pl4nted" not in str(err.value) and "token=***" in str(err.value)
