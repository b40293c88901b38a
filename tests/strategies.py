"""Hypothesis strategies for specs and rows, shared by the test suites."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from wid.spec import Aggregation, Window
from wid.spec.catalog import AGGREGATIONS
from wid.spec.kinds import KINDS
from wid.spec.kinds.base import field_default

NAMES = st.sampled_from(["a", "b", "c", "k1", "k2", "val", "x_y"])
SINGLE = [n for n, s in AGGREGATIONS.items() if 1 in s.columns and 2 not in s.columns]
PAIRED = [n for n, s in AGGREGATIONS.items() if 2 in s.columns]


@st.composite
def aggregations(draw: st.DrawFn, value_cols: tuple[str, ...] = ("v", "w"), alias: str | None = None) -> Aggregation:
    """Any valid Aggregation over `value_cols`."""
    name = draw(st.sampled_from(sorted(AGGREGATIONS)))
    alias = alias or draw(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True))
    kw: dict[str, Any] = {"as_": alias}
    if name == "count":
        kw["column"] = draw(st.sampled_from([None, *value_cols]))
    elif name in PAIRED:
        kw["column"], kw["column2"] = draw(st.permutations(value_cols))[:2]
    else:
        kw["column"] = draw(st.sampled_from(value_cols))
    if name == "percentile":
        kw["percent"] = draw(st.sampled_from([0.0, 10.0, 25.0, 50.0, 90.0, 100.0, 33.3]))
    if name == "count_distinct" and draw(st.booleans()):
        kw["mode"] = "exact"
        kw["max_distinct_values_per_group"] = draw(st.integers(1000, 10**6))
    return Aggregation(name, **kw)


_MS = st.integers(1, 10).map(lambda x: x * 1000)
# Each kind's parameters, in milliseconds or rows, by the kind's name (`wid.spec.kinds.KINDS`).
KIND_PARAMS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "tumbling": st.fixed_dictionaries({"duration_ms": _MS, "origin_ms": st.integers(-5000, 5000)}),
    "hopping": st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(-3000, 3000)).map(
        lambda t: {"duration_ms": t[0] * t[1] * 500, "hop_ms": t[1] * 500 * max(1, t[0] // 2), "origin_ms": t[2]}
        if t[1] * max(1, t[0] // 2) <= t[0] * t[1] else {"duration_ms": t[0] * t[1] * 500, "hop_ms": 500}),
    "session": st.one_of(st.fixed_dictionaries({"gap_ms": _MS}), st.just({"gap_column": "gap"})),
    "count": st.tuples(st.integers(1, 6), st.integers(1, 6)).map(lambda t: {"size_rows": max(t), "hop_rows": min(t)}),
    "rolling": st.fixed_dictionaries({"duration_ms": _MS, "every_rows": st.sampled_from([None, 1, 2, 3])}),
    "landmark": st.fixed_dictionaries({"hop_ms": st.just(1000), "landmark_ms": st.integers(-5000, 5000),
                                       "max_duration_ms": st.sampled_from([None, 3000, 5000])}),
}


def transcript_params(kind: str) -> list[dict[str, Any]]:
    """The parameters of `kind`'s windows in its transcripts
    (``tests/transcripts``), each without those at their defaults."""
    from tests.transcript import all_transcripts

    shapes = [t.window.shape for t in all_transcripts() if t.window.kind == kind]
    return [{f: getattr(s, f) for f in s.fields if getattr(s, f) != field_default(type(s), f)} for s in shapes]


def kind_params(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """The kind-specific parameters of a Window, in milliseconds or rows:
    `KIND_PARAMS`', or for a kind without an entry there, those of its
    transcripts (a kind comes with them). Raises KeyError for a kind with
    neither, rather than draw another kind's parameters."""
    if kind in KIND_PARAMS:
        return KIND_PARAMS[kind]
    found = transcript_params(kind)
    if not found:
        raise KeyError(f"no strategy for window kind {kind!r}: add a transcript of it (tests/transcripts), or its "
                       "parameters to tests.strategies.KIND_PARAMS")
    return st.sampled_from(found)


@st.composite
def windows(draw: st.DrawFn, kinds: tuple[str, ...] = tuple(KINDS), n_aggs: int = 3) -> Window:
    """A valid Window of one of `kinds` (default: every registered kind) over
    columns ts (event time), k1/k2 (keys), v, w (values)."""
    kind = draw(st.sampled_from(kinds))
    shape = KINDS[kind]
    params = {k: v for k, v in draw(kind_params(kind)).items() if v is not None}
    keys = draw(st.sampled_from([(), ("k1",), ("k1", "k2")]))
    if "partition_by" in shape.fields and keys:
        split = draw(st.integers(0, len(keys)))
        params["partition_by"], params["group_by"] = keys[:split], keys[split:]
    else:
        params["group_by"] = keys
    if "tie_breaker" in shape.fields and draw(st.booleans()):
        params["tie_breaker"] = "id"
    if "order_by" in shape.fields and draw(st.integers(0, 3)) == 0:
        params["order_by"] = "w"  # a nullable integer column: NULLs rank first
    if shape(**{k: v for k, v in params.items() if k in shape.fields}).ranks_rows() and draw(st.booleans()):
        params["rank_by"] = "arrival"  # in batch the input is one arrival: the same ranks
    aggs = tuple(draw(aggregations(alias=f"a{i}")) for i in range(draw(st.integers(1, n_aggs))))
    return Window(kind=kind, event_time_column="ts", event_time_unit="us", aggregations=aggs, **params)
