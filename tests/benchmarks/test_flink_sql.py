"""The Flink SQL text of the Flink peer (`benchmarks.peers.flink_sql`): pure,
no Flink. Running it on Flink against DuckDB is the benchmark's agreement
check, not a test."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.peers import flink_sql
from benchmarks.query import OUTPUT, WindowQuery

DAY_MS = 86_400_000


@pytest.mark.parametrize(("ms", "literal"), [
    (1, "INTERVAL '0 00:00:00.001' DAY TO SECOND(3)"),
    (10_000, "INTERVAL '0 00:00:10.000' DAY TO SECOND(3)"),
    (90_500, "INTERVAL '0 00:01:30.500' DAY TO SECOND(3)"),
    (DAY_MS + 3_600_000, "INTERVAL '1 01:00:00.000' DAY TO SECOND(3)"),
])
def test_interval_literal(ms: int, literal: str) -> None:
    assert flink_sql.interval(ms) == literal


@given(st.integers(1, 100 * DAY_MS - 1))
def test_interval_reads_back_as_its_milliseconds(ms: int) -> None:
    days, h, m, s, milli = map(int, re.findall(r"\d+", flink_sql.interval(ms).split("'")[1]))
    assert (((days * 24 + h) * 60 + m) * 60 + s) * 1000 + milli == ms
    assert h < 24 and m < 60 and s < 60


@pytest.mark.parametrize("ms", [0, -1, 100 * DAY_MS])
def test_interval_out_of_flink_range_is_an_error(ms: int) -> None:
    with pytest.raises(ValueError, match="1 ms to 99 days"):
        flink_sql.interval(ms)


def select_names(sql: str) -> list[str]:
    """The output names of `sql`'s outermost SELECT list (the alias after AS,
    else the column after the last dot)."""
    body = sql[sql.index("SELECT") + len("SELECT"):]
    items, depth, current = [], 0, ""
    for i, ch in enumerate(body):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and body.startswith("FROM", i):
            break
        if depth == 0 and ch == ",":
            items, current = [*items, current], ""
        else:
            current += ch
    return [re.split(r"\s+AS\s+|\.", item.strip())[-1] for item in [*items, current]]


@pytest.mark.parametrize("q", [
    WindowQuery("tumbling", 60_000),
    WindowQuery("hopping", 10_000, slide_ms=2_000),
    WindowQuery("session", gap_ms=1_500),
])
def test_window_sql_selects_the_shared_output(q: WindowQuery) -> None:
    assert select_names(flink_sql.window_sql(q)) == list(OUTPUT)
    assert select_names(flink_sql.cumulate_sql(1_000, 60_000)) == list(OUTPUT)


def test_window_tvfs() -> None:
    #   HOP takes the slide before the size; SESSION partitions by the key
    assert flink_sql.window_tvf(WindowQuery("hopping", 10_000, slide_ms=2_000)) == (
        "HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '0 00:00:02.000' DAY TO SECOND(3), "
        "INTERVAL '0 00:00:10.000' DAY TO SECOND(3))")
    assert flink_sql.window_tvf(WindowQuery("session", gap_ms=500)).startswith(
        "SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '0 00:00:00.500'")
    with pytest.raises(ValueError, match="slide_ms"):
        flink_sql.window_tvf(WindowQuery("hopping", 10_000))
    with pytest.raises(ValueError, match="gap_ms"):
        flink_sql.window_tvf(WindowQuery("session"))


@pytest.mark.parametrize("name", sorted(flink_sql.NEXMARK_QUERIES))
def test_nexmark_query_selects_its_columns_from_its_tables(name: str) -> None:
    sql, tables, columns = flink_sql.NEXMARK_QUERIES[name]
    assert select_names(sql) == list(columns)
    assert set(re.findall(r"(?:TABLE|FROM) (person|auction|bid)\b", sql)) == set(tables)


def test_csv_source_ddl() -> None:
    ddl = flink_sql.csv_source("bid", flink_sql.NEXMARK["bid"], "/d/csv/bid.csv")
    assert ddl.startswith("CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT")
    assert "WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND" in ddl
    assert ddl.endswith("'connector' = 'filesystem', 'path' = '/d/csv/bid.csv', 'format' = 'csv')")
