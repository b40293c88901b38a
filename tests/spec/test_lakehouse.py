"""Lakehouse sinks at load time: a Delta (Iceberg) target is refused on a
Spark that Delta (Iceberg) has no release for, naming the versions that have one (no JVM: only
PySpark's version); its fields are checked; the session settings that bring
Delta's jar. These run on every PySpark, Delta installed or not."""

from __future__ import annotations

import pytest

from tests.fixtures import pipeline_toml
from wid.errors import ConfigError
from wid.spec import lakehouse
from wid.spec import pipeline as pipeline_module
from wid.spec.lakehouse import check_spark, installed_spark_version, package_for, spark_minor
from wid.spec.pipeline import SinkSpec
from wid.spec.toml_io import loads_pipeline

DELTA_TARGET = '[target]\nkind = "delta"\npath = "windows.delta"'


def delta_pipeline(target: str = DELTA_TARGET, dead_letter: str | None = None) -> str:
    text = pipeline_toml().replace('[target]\nkind = "sqlite"\npath = "out.sqlite"\ntable = "windows"', target)
    return text if dead_letter is None else text.replace(
        '[dead_letter]\nkind = "sqlite"\npath = "out.sqlite"\ntable = "dead_letter"', dead_letter)


@pytest.mark.parametrize(("kind", "version", "supported"), [
    ("delta", "4.0.1", True), ("delta", "4.1.4", True), ("delta", "4.2.0", True), ("delta", "4.3.0", False),
    ("delta", "3.5.3", False), ("iceberg", "4.0.0", True), ("iceberg", "4.1.1", True), ("iceberg", "4.2.0", False),
])
def test_which_spark_each_format_has_a_jar_for(kind: str, version: str, supported: bool) -> None:
    assert (package_for(kind, version) is not None) == supported
    if supported:
        artifact = "delta-spark_" if kind == "delta" else "iceberg-spark-runtime-"
        assert f"{artifact}{spark_minor(version)}_2.13:" in str(package_for(kind, version))


def test_an_unsupported_spark_is_refused_naming_the_supported_versions() -> None:
    with pytest.raises(ConfigError) as err:
        check_spark("delta", "4.3.0")
    assert err.value.field == "kind"
    assert "4.0, 4.1, 4.2" in str(err.value) and "PySpark 4.3.0" in str(err.value)
    check_spark("delta", "4.2.0")  # no error
    check_spark("delta", None)  # no PySpark: nothing runs, nothing to check


def test_a_delta_target_is_refused_at_load_time_on_pyspark_4_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "installed_spark_version", lambda: "4.3.0")
    with pytest.raises(ConfigError) as err:
        loads_pipeline(delta_pipeline())
    assert err.value.field == "target.kind"
    assert str(err.value).startswith("target.kind: kind = 'delta' needs a Spark version Delta supports (4.0, 4.1, 4.2)")
    with pytest.raises(ConfigError) as err:  # the dead letter too
        loads_pipeline(delta_pipeline(target='[target]\nkind = "console"',
                                      dead_letter='[dead_letter]\nkind = "delta"\npath = "dead.delta"'))
    assert err.value.field == "dead_letter.kind"


def test_an_iceberg_target_is_refused_on_pyspark_4_2_and_needs_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    target = '[target]\nkind = "iceberg"\npath = "warehouse"\ntable = "analytics.windows"'
    monkeypatch.setattr(pipeline_module, "installed_spark_version", lambda: "4.2.0")
    with pytest.raises(ConfigError) as err:
        loads_pipeline(delta_pipeline(target))
    assert err.value.field == "target.kind" and "Iceberg supports (4.0, 4.1)" in str(err.value)
    monkeypatch.setattr(pipeline_module, "installed_spark_version", lambda: "4.1.1")
    spec = loads_pipeline(delta_pipeline(target))
    assert spec.target == SinkSpec("iceberg", path="warehouse", table="analytics.windows")
    for table, words in (("", "non-empty name"), ("a.b.c", "namespace.name"), ("my table", "not a name")):
        with pytest.raises(ConfigError) as err:
            loads_pipeline(delta_pipeline(target.replace("analytics.windows", table)))
        assert err.value.field == "target.table" and words in str(err.value)
    with pytest.raises(ConfigError) as err:  # one table for windows and dead letters
        loads_pipeline(delta_pipeline(target, dead_letter=target.replace("[target]", "[dead_letter]")))
    assert err.value.field == "dead_letter.path"


def test_the_installed_pyspark_decides() -> None:
    # on this environment's PySpark, for real: refused exactly when Delta has no jar for it
    version = installed_spark_version()
    assert version is not None
    if package_for("delta", version) is None:
        with pytest.raises(ConfigError, match="needs a Spark version Delta supports"):
            loads_pipeline(delta_pipeline())
    else:
        spec = loads_pipeline(delta_pipeline())
        assert spec.target == SinkSpec("delta", path="windows.delta")


@pytest.mark.parametrize(("target", "field", "words"), [
    ('[target]\nkind = "delta"', "target.path", "needs a path"),
    ('[target]\nkind = "delta"\npath = "w.delta"\ntable = "w"', "target.table", "not a catalog table"),
    ('[target]\nkind = "delta"\npath = "w.delta"\nmode = "overwrite"', "target.mode", "has no mode"),
])
def test_delta_fields_are_checked(monkeypatch: pytest.MonkeyPatch, target: str, field: str, words: str) -> None:
    monkeypatch.setattr(pipeline_module, "installed_spark_version", lambda: "4.2.0")
    with pytest.raises(ConfigError) as err:
        loads_pipeline(delta_pipeline(target))
    assert err.value.field == field and words in str(err.value)


def test_target_and_dead_letter_are_not_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline_module, "installed_spark_version", lambda: "4.2.0")
    with pytest.raises(ConfigError) as err:
        loads_pipeline(delta_pipeline(dead_letter='[dead_letter]\nkind = "delta"\npath = "windows.delta"'))
    assert err.value.field == "dead_letter.path"
    spec = loads_pipeline(delta_pipeline(dead_letter='[dead_letter]\nkind = "delta"\npath = "dead.delta"'))
    assert spec.dead_letter == SinkSpec("delta", path="dead.delta")


def test_the_session_gets_delta_beside_kafka_and_keeps_what_the_user_set() -> None:
    from wid.io import kafka
    from wid.io.lakehouse import CATALOG, EXTENSION, with_connector

    conf = with_connector(kafka.with_connector({"spark.sql.extensions": "my.Extension"}, "4.2.0"), "4.2.0")
    packages = conf["spark.jars.packages"].split(",")
    assert packages == [kafka.connector("4.2.0"), lakehouse.DELTA_PACKAGES["4.2"]]
    excludes = conf["spark.jars.excludes"].split(",")
    assert set(kafka.SHIPPED) <= set(excludes) and "com.fasterxml.jackson.core:jackson-databind" in excludes
    assert len(excludes) == len(set(excludes))
    assert conf["spark.sql.extensions"] == f"my.Extension,{EXTENSION}"
    assert conf["spark.sql.catalog.spark_catalog"] == CATALOG
    mine = {"spark.jars.packages": "io.delta:delta-spark_4.2_2.13:9.9.9"}  # the user's own Delta: left alone
    assert with_connector(mine, "4.2.0")["spark.jars.packages"] == "io.delta:delta-spark_4.2_2.13:9.9.9"
    assert with_connector(with_connector({}, "4.1.0"), "4.1.0") == with_connector({}, "4.1.0")
    both = with_connector({}, "4.1.1", ("delta", "iceberg"))
    assert both["spark.jars.packages"].split(",") == [lakehouse.DELTA_PACKAGES["4.1"], lakehouse.ICEBERG_PACKAGES["4.1"]]
    iceberg_only = with_connector({}, "4.0.1", ("iceberg",))
    assert iceberg_only == {"spark.jars.packages": lakehouse.ICEBERG_PACKAGES["4.0"]}  # no extension, no catalog
    with pytest.raises(ConfigError, match="Iceberg supports"):
        with_connector({}, "4.2.0", ("iceberg",))
