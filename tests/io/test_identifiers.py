"""Names that reach SQL (tables, group columns, aliases) are identifiers by
one rule (`wid.spec.names.IDENTIFIER_RULE`), checked when the pipeline is
declared, and quoted by the driver when written. Hostile names (quotes,
semicolons, comments, Unicode, reserved words, 1,000-character names) are
either refused at config time, naming the field, or written safely: against
a real PostgreSQL server and SQLite, nothing but the target table (and the
dead letter) ever changes."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import wid
from wid.errors import ConfigError
from wid.io import sinks
from wid.spec import Aggregation, Window
from wid.spec.names import is_identifier
from wid.spec.pipeline import PipelineSpec, SinkSpec, SourceSpec

INJECTIONS = ['x" BIGINT); COMMIT; DROP TABLE victim; --', "x'); DROP TABLE victim; --", "a;b", "a--b", "a/*b*/",
              "a b", "a`b", "a.b", "a\"b", "", " a", "a\x00b", "1abc"]
SAFE = ["select", "order", "user", "Table", "ünïcødé", "数量", "_x", "a" * 63, "é" * 31, "GROUP", "from_"]
HOSTILE = st.one_of(st.sampled_from(INJECTIONS + SAFE + ["b" * 1000, "é" * 32]),
                    st.text(alphabet=st.sampled_from(list("ab_\"';-/* 字é1`.)(")), min_size=0, max_size=80))


def spec_with(root: Path, name: str, role: str, target: SinkSpec) -> PipelineSpec:
    """A batch pipeline over ``data.csv`` (columns ts, g, v) with `name` as
    the target table, the alias, or the group column (`role`)."""
    group = name if role == "group_by" else "g"
    alias = name if role == "alias" else "n"
    window = Window(kind="tumbling", duration_ms=60_000, event_time_column="ts", group_by=(group,),
                    aggregations=(Aggregation("count", as_=alias), Aggregation("sum", "v", as_="total")))
    if role == "table":
        target = SinkSpec(target.kind, path=target.path, url=target.url, table=name)
    sql = f"SELECT ts, g AS `{group.replace('`', '``')}`, v FROM source" if role == "group_by" else None
    dead = SinkSpec(target.kind, path=target.path, url=target.url, table="dead_letter")
    return PipelineSpec(name="names", source=SourceSpec("csv", path="data.csv", schema="ts TIMESTAMP, g STRING, v DOUBLE"),
                        window=window, target=target, dead_letter=dead, transform_sql=sql, base_dir=str(root))


@settings(max_examples=300, deadline=None)
@given(name=HOSTILE, role=st.sampled_from(["table", "alias", "group_by"]))
def test_a_name_is_refused_at_config_time_unless_it_is_an_identifier(name: str, role: str, tmp_path_factory: Any) -> None:
    target = SinkSpec("sqlite", path="out.sqlite", table="windows")
    try:
        spec_with(Path("."), name, role, target)
    except ConfigError as err:
        assert not is_identifier(name), err
        assert err.field.split(".")[-1].split("[")[0] in {"table": ("table",), "alias": ("as",),
                                                          "group_by": ("group_by",)}[role], err.field
        return
    assert is_identifier(name)


def pg_tables(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with psycopg.connect(url) as con:
        names = [r[0] for r in con.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        return {n: sorted(con.execute(psycopg.sql.SQL("SELECT * FROM {}").format(psycopg.sql.Identifier(n)))
                          .fetchall(), key=repr) for n in names}


def sqlite_tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with closing(sqlite3.connect(path)) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: sorted(con.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(name=st.sampled_from(SAFE), role=st.sampled_from(["table", "alias", "group_by"]))
@example(name="a" * 63, role="table")  # the longest names: the index's name must not be cut to the table's
@example(name="é" * 31, role="table")
def test_identifiers_are_written_and_nothing_else_changes(spark: Any, postgres_url: str, tmp_path_factory: Any,
                                                          kind: str, name: str, role: str) -> None:
    root = tmp_path_factory.mktemp("names")
    (root / "data.csv").write_text("ts,g,v\n2024-01-01 00:00:10,a,1.5\n2024-01-01 00:00:20,a,2.5\n2024-01-01 00:01:00,b,4\n")
    db = root / "out.sqlite"
    target = SinkSpec("sqlite", path=str(db), table="windows") if kind == "sqlite" else \
        SinkSpec("postgres", url=postgres_url, table="windows")
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("CREATE TABLE victim (x INTEGER)")
        con.execute("INSERT INTO victim VALUES (42)")
    with psycopg.connect(postgres_url) as con:
        for table in ("windows", "dead_letter", name):
            con.execute(psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(table)))
        con.execute("CREATE TABLE IF NOT EXISTS victim (x INTEGER)")
        con.execute("DELETE FROM victim")
        con.execute("INSERT INTO victim VALUES (42)")
    before = sqlite_tables(db) if kind == "sqlite" else pg_tables(postgres_url)
    spec = spec_with(root, name, role, target)
    report = wid.run_pipeline(spec, spark)
    assert report.identity_holds and report.rows_aggregated == 3
    after = sqlite_tables(db) if kind == "sqlite" else pg_tables(postgres_url)
    table = name if role == "table" else "windows"
    assert set(after) == set(before) | {table, "dead_letter"}
    assert {n: rows for n, rows in after.items() if n in before} == before
    assert sorted(r[2:4] for r in after[table]) == [("a", 2), ("b", 1)]


def test_the_sink_refuses_a_column_that_is_not_an_identifier_before_any_sql(spark: Any, tmp_path: Path) -> None:
    # the last guard: a rolling window writes every input column, whose names come from the data
    db = tmp_path / "out.sqlite"
    df = spark.createDataFrame([(1,)], "x long").withColumnRenamed("x", 'x" BIGINT); DROP TABLE victim; --')
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("CREATE TABLE victim (x INTEGER)")
    with pytest.raises(ConfigError) as err:
        sinks.write(df, SinkSpec("sqlite", path=str(db), table="windows"), ".", ["x"])
    assert err.value.field == "target"
    assert set(sqlite_tables(db)) == {"victim"}
