"""The plans' SQL text (`wid.spark.columns`): Spark reads a quoted literal
and identifier back as the Python string they quote, and `Exact`'s window
arithmetic, evaluated by Spark on longs, gives what Python's integers give."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from wid.semantics.windowing import Hopping
from wid.spark.columns import exact, ident, sql, sql_string

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@SETTINGS
@given(st.lists(TEXT, min_size=1, max_size=6))
@example(["\\", "'", "\\'", "a\\nb", "\\u0041", "%s"])
def test_a_quoted_literal_reads_back_as_its_text(spark: Any, texts: list[str]) -> None:
    row = spark.range(1).select(*[sql(f"{sql_string(t)} AS c{i}") for i, t in enumerate(texts)]).first()
    assert list(row) == texts


def test_a_quoted_identifier_names_its_column(spark: Any) -> None:
    names = ["a`b", "select", "x y", "``"]
    df = spark.createDataFrame([tuple(range(len(names)))], names)
    assert list(df.select(*[sql(f"{ident(n)} + 1 AS {ident(n + '!')}") for n in names]).first()) == [1, 2, 3, 4]


MICROS = st.integers(-(10 ** 15), 10 ** 15)


@SETTINGS
@given(st.lists(MICROS, min_size=1, max_size=40), st.integers(1, 10 ** 10), st.integers(1, 10 ** 10),
       st.integers(-(10 ** 10), 10 ** 10))
def test_window_arithmetic_in_spark_is_python_s(spark: Any, times: list[int], duration: int, hop: int,
                                                 origin: int) -> None:
    geo = Hopping(duration, hop, origin)
    t = exact("t")
    terms = {"last": geo.last_window_starting_by, "first": geo.first_window_ending_after, "pane": geo.pane,
             "start": lambda x: geo.start(geo.last_window_starting_by(x)), "first_of_pane": geo.first_window,
             "neg": lambda x: 7 - x}
    df = spark.createDataFrame([(v,) for v in times], "t long")
    got = df.select("t", *[f(t).col.alias(name) for name, f in terms.items()]).collect()
    want = [{"t": v, **{name: f(v) for name, f in terms.items()}} for v in times]
    assert sorted((r.asDict() for r in got), key=lambda r: r["t"]) == sorted(want, key=lambda r: r["t"])
