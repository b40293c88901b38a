"""Validation at construction: every bad setting names its field."""

from __future__ import annotations

from typing import Any

import pytest

from wid.errors import ConfigError
from wid.spec import Aggregation, Punctuation, Window

N = (Aggregation("count", as_="n"),)


def make(**kw: Any) -> Window:
    base: dict[str, Any] = {"kind": "tumbling", "duration_ms": 60_000, "event_time_column": "ts", "aggregations": N}
    base.update(kw)
    return Window(**base)


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"kind": "hopping", "hop_ms": 120_000}, "hop_ms", "longer than duration_ms"),
        ({"kind": "session", "duration_ms": None}, "gap_ms", "exactly one of"),
        ({"kind": "session", "duration_ms": None, "gap_ms": 5, "gap_column": "g"}, "gap_ms", "exactly one of"),
        ({"hop_ms": 1000}, "hop_ms", "not used by kind = 'tumbling'"),
        ({"late_data": "reopen"}, "allowed_lateness_ms", "needs a budget"),
        ({"allowed_lateness_ms": 5}, "allowed_lateness_ms", "only used with"),
        ({"duration_ms": 0}, "duration_ms", "positive"),
        ({"duration_ms": "60s"}, "duration_ms", "integer"),
        ({"duration_ms": True}, "duration_ms", "integer"),
        ({"lateness_ms": -1}, "lateness_ms", "negative"),
        ({"kind": "windy"}, "kind", "unknown window kind"),
        ({"emit": "always"}, "emit", "must be one of"),
        ({"event_time_column": None}, "event_time_column", "needs the event-time column"),
        ({"time_mode": "processing"}, "event_time_column", "stamps arrival time"),
        ({"group_by": ["n"]}, "aggregations[0].as", "collides with a group column"),
        ({"group_by": ["window_start"]}, "group_by", "collides with a window column"),
        ({"group_by": ["k", "k"]}, "group_by", "listed twice"),
        ({"aggregations": (N[0], Aggregation("sum", "v", as_="n"))}, "aggregations[1].as", "collides with the alias"),
        ({"aggregations": ()}, "aggregations", "at least one"),
        ({"partition_by": ["p"]}, "partition_by", "not used by kind = 'tumbling'"),
        ({"kind": "count", "duration_ms": None, "size_rows": 3, "hop_rows": 4}, "hop_rows", "longer than size_rows"),
        ({"kind": "landmark", "duration_ms": None, "hop_ms": 1000, "landmark_ms": 0, "max_duration_ms": 2500},
         "max_duration_ms", "not a multiple"),
        ({"kind": "landmark", "duration_ms": None, "hop_ms": 1000}, "landmark_ms", "requires"),
        ({"kind": "rolling", "every_rows": 0}, "every_rows", "positive"),
        ({"rank_by": "arrival"}, "rank_by", "not used by kind = 'tumbling'"),
        ({"kind": "count", "duration_ms": None, "size_rows": 3, "rank_by": "insertion"}, "rank_by", "must be one of"),
        ({"kind": "rolling", "rank_by": "arrival"}, "rank_by", "only chooses which rows"),
        ({"kind": "count", "duration_ms": None, "size_rows": 3, "late_data": "reopen", "allowed_lateness_ms": 5},
         "late_data", "shift every later rank"),
        ({"kind": "count", "duration_ms": None, "size_rows": 3, "rank_by": "arrival", "late_data": "reopen",
          "allowed_lateness_ms": 5}, "late_data", "no row is ever late"),
        ({"kind": "rolling", "every_rows": 2, "late_data": "reopen", "allowed_lateness_ms": 5}, "late_data",
         "rolling windows ranked by order"),
        ({"kind": "rolling", "every_rows": 2, "emit": "on_update"}, "emit", "only known once the closing point"),
        ({"group_by": ["k"], "punctuation": Punctuation("p", scope=("seg",))}, "punctuation.scope", "not in group_by"),
        ({"kind": "count", "duration_ms": None, "size_rows": 3, "group_by": ["seg"],
          "punctuation": Punctuation("p", scope=("seg",))}, "punctuation.scope", "not in partition_by"),
    ],
)
def test_bad_window_names_the_field(kw: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        make(**kw)
    assert err.value.field == field
    assert words in str(err.value)


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"agg": "summ", "column": "v"}, "agg", "did you mean 'sum'"),
        ({"agg": "sum"}, "column", "takes 1 column"),
        ({"agg": "corr", "column": "x"}, "column", "takes 2 column"),
        ({"agg": "sum", "column": "v", "column2": "w"}, "column", "remove `column2`"),
        ({"agg": "sum", "column": "v", "as_": ""}, "as", "non-empty"),
        ({"agg": "count_distinct", "column": "v", "mode": "exact"}, "max_distinct_values_per_group", "cap"),
        ({"agg": "count_distinct", "column": "v", "max_distinct_values_per_group": 5}, "max_distinct_values_per_group",
         "only applies"),
        ({"agg": "sum", "column": "v", "mode": "exact"}, "mode", "only count_distinct"),
        ({"agg": "percentile", "column": "v"}, "percent", "[0, 100]"),
        ({"agg": "percentile", "column": "v", "percent": 101}, "percent", "[0, 100]"),
        ({"agg": "med", "column": "v", "percent": 50}, "percent", "takes no percent"),
        ({"agg": "sum", "column": "a.b"}, "column", "dot"),
    ],
)
def test_bad_aggregation_names_the_field(kw: dict[str, Any], field: str, words: str) -> None:
    kw.setdefault("as_", "out")
    with pytest.raises(ConfigError) as err:
        Aggregation(**kw)
    assert err.value.field == field
    assert words in str(err.value)


def test_defaults_and_normalisation() -> None:
    assert Aggregation("count", "*", as_="n").column is None
    assert Aggregation("count_distinct", "v", as_="d").mode == "approximate"
    assert Aggregation("percentile", "v", as_="p", percent=90).percent == 90.0
    w = make(group_by=["a", "b"])
    assert w.group_by == ("a", "b")
    assert w.output_prefix == ("window_start", "window_end")
    c = make(kind="count", duration_ms=None, size_rows=5, partition_by=["p"], group_by=["g"])
    assert c.shape.hop_rows_or_size == 5 and c.size_rows == 5  # a kind's parameter reads off the window too
    assert c.output_prefix == ("window_start", "window_end", "window_id")
    assert c.key_columns == ("p", "g")


def test_rank_and_reopen_rules_that_hold() -> None:
    # rolling extents are by time: reopen and on_update work unless every_rows picks rows by order rank
    make(kind="rolling", late_data="reopen", allowed_lateness_ms=5, emit="on_update")
    make(kind="rolling", every_rows=2, rank_by="arrival", late_data="reopen", allowed_lateness_ms=5, emit="on_update")
    c = make(kind="count", duration_ms=None, size_rows=3, partition_by=["seg"], rank_by="arrival",
             punctuation=Punctuation("p", scope=("seg",)))
    assert c.closing_columns == ("seg",) and c.rank_by == "arrival"


def test_punctuation_validation() -> None:
    with pytest.raises(ConfigError) as err:
        Punctuation(predicate=" ")
    assert err.value.field == "predicate"
    p = Punctuation(predicate="is_punct", scope=["seg_id"])
    assert p.scope == ("seg_id",)


def test_specs_are_frozen_and_hashable_by_value() -> None:
    a, b = make(group_by=["k"]), make(group_by=("k",))
    assert a == b
    assert hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.kind = "hopping"  # type: ignore[misc]


N = (Aggregation("count", as_="n"),)
COMMON: dict[str, object] = {"event_time_column": "ts", "aggregations": N, "group_by": ("k",)}


@pytest.mark.parametrize(("built", "flat"), [
    (lambda: Window.tumbling(60_000, origin_ms=5, **COMMON), {"kind": "tumbling", "duration_ms": 60_000, "origin_ms": 5}),
    (lambda: Window.hopping(60_000, 10_000, **COMMON), {"kind": "hopping", "duration_ms": 60_000, "hop_ms": 10_000}),
    (lambda: Window.session(gap_column="g", **COMMON), {"kind": "session", "gap_column": "g"}),
    (lambda: Window.count(5, hop_rows=2, partition_by=["p"], **COMMON),
     {"kind": "count", "size_rows": 5, "hop_rows": 2, "partition_by": ("p",)}),
    (lambda: Window.rolling(1000, every_rows=3, tie_breaker="id", **COMMON),
     {"kind": "rolling", "duration_ms": 1000, "every_rows": 3, "tie_breaker": "id"}),
    (lambda: Window.landmark(1000, 0, max_duration_ms=3000, **COMMON),
     {"kind": "landmark", "hop_ms": 1000, "landmark_ms": 0, "max_duration_ms": 3000}),
])
def test_a_kind_s_constructor_builds_the_window_the_flat_form_declares(built: Any, flat: dict[str, object]) -> None:
    assert built() == Window(**flat, **COMMON)  # type: ignore[arg-type]


@pytest.mark.parametrize(("build", "field"), [
    (lambda: Window.tumbling(60_000, gap_ms=5, **COMMON), "gap_ms"),
    (lambda: Window.session(1000, hop_ms=5, **COMMON), "hop_ms"),
    (lambda: Window.hopping(60_000, 1000, size_rows=3, **COMMON), "size_rows"),
    (lambda: Window.count(3, duration_ms=5, **COMMON), "duration_ms"),
    (lambda: Window.rolling(1000, kind="tumbling", **COMMON), "kind"),
])
def test_a_kind_s_constructor_refuses_another_kind_s_field(build: Any, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        build()
    assert err.value.field == field


def test_every_kind_parameter_is_a_window_parameter_and_each_kind_names_what_it_requires() -> None:
    import inspect

    from wid.spec.kinds import KINDS, kind_fields

    names = set(inspect.signature(Window).parameters)
    assert set(kind_fields()) <= names and {f"{n[:-3]}" for n in kind_fields() if n.endswith("_ms")} <= names
    for name, kind in KINDS.items():
        assert kind.kind == name and set(kind.required) <= set(kind.fields), name
        assert set(kind.fields) <= set(inspect.signature(getattr(Window, kind.constructor)).parameters), name


def test_an_unknown_parameter_is_refused_with_the_closest() -> None:
    with pytest.raises(ConfigError) as err:
        make(duraton="5 minutes")
    assert err.value.field == "duraton" and "did you mean 'duration'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        Window.tumbling(60_000, event_time_column="ts", aggregations=N, lateness_msec=5)
    assert err.value.field == "lateness_msec" and "did you mean 'lateness_ms'" in str(err.value)


@pytest.mark.parametrize(("kw", "fix"), [
    ({"duration": 300}, 'write duration_ms=300 or duration="300 ms"'),
    ({"lateness": 5}, 'write lateness_ms=5 or lateness="5 ms"'),
    ({"kind": "landmark", "duration_ms": None, "hop_ms": 10, "landmark": 0}, "write landmark_ms=0 (epoch ms)"),
])
def test_a_bare_number_for_a_text_parameter_is_refused_with_both_fixes(kw: dict[str, Any], fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        make(**{"duration_ms": None, **kw} if "duration" in kw else kw)
    assert err.value.field == next(iter(k for k in kw if k not in ("kind", "duration_ms", "hop_ms")))
    assert fix in str(err.value)


def test_a_shape_is_the_kind_s_parameters_and_serialises_to_a_stable_table() -> None:
    from wid.spec.kinds import HoppingWindows, shape_of

    hop = HoppingWindows(duration="1 hour", hop_ms=60_000)
    w = Window(shape=hop, event_time_column="ts", aggregations=N)
    assert w == make(kind="hopping", duration_ms=3_600_000, hop_ms=60_000) and w.kind == "hopping"
    assert hop.table() == {"kind": "hopping", "duration": "1 hour", "hop_ms": 60_000}
    assert shape_of("hopping")(**{k: v for k, v in hop.table().items() if k != "kind"}) == hop
    with pytest.raises(ConfigError) as err:
        Window(kind="tumbling", shape=hop, event_time_column="ts", aggregations=N)
    assert err.value.field == "kind"


def test_a_test_strategy_for_a_kind_without_one_fails_rather_than_draw_another_kind_s() -> None:
    from tests.strategies import kind_params

    with pytest.raises(KeyError, match="no strategy for window kind 'cyclic'"):
        kind_params("cyclic")
