"""The fused pane merge (rows -> panes -> windows, no Spark) against brute
force over the rows: every window holding a row, each aggregate computed
directly from the window's rows with Spark's semantics (NULLs skipped, NaN
above every number, IEEE sums). Pane scales cover the dense fast path, the
sorted path and the lexsort path; a tiny chunk size covers chunked input."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.kernels.test_pane_merge import VAL, same, spark_key
from wid.kernels import pane_merge as pm
from wid.kernels import pane_reduce as pr

#   panes:   |q0|q1|q2|q3|q4|q5|        rows: several per pane, or none
#   windows: [w0 ....... ]               length 3, hop 1 (sliding), or
#               [w1 ...... ]             cumulative from the period start
SCALES = {"dense": 1, "sparse": 10**9, "huge": 2**58}
FIELDS = (pm.FieldOp("count", (), ("rows",)), pm.FieldOp("count", ("x",), ("nx",)),
          pm.FieldOp("sum", ("x",), ("sx",)), pm.FieldOp("sum", ("i",), ("si",)),
          pm.FieldOp("min", ("x",), ("lo",)), pm.FieldOp("max", ("x",), ("hi",)),
          pm.FieldOp("min", ("s",), ("smin",)), pm.FieldOp("max", ("i",), ("imax",)),
          pm.FieldOp("moments", ("m",), ("mn", "mq")), pm.FieldOp("moments", ("m", "y"), ("pn", "pqx", "pqy", "pc")))
MOMENTS = ("mq", "pqx", "pqy", "pc")
SCHEMA = pa.schema([("k", pa.string()), ("g", pa.int32()), ("f", pa.float64()), ("_wid_pane", pa.int64()), ("x", pa.float64()),
                    ("i", pa.int64()), ("s", pa.string()), ("m", pa.float64()), ("y", pa.float64()),
                    ("_wid_last", pa.int64())])


@st.composite
def rows(draw: st.DrawFn) -> list[dict[str, Any]]:
    scale = SCALES[draw(st.sampled_from(sorted(SCALES)))]
    base = draw(st.integers(-3, 3)) * scale
    out = []
    for _ in range(draw(st.integers(1, 40))):
        out.append({"k": draw(st.sampled_from(["a", "b", "é"])), "g": draw(st.sampled_from([-7, 0, 10**6])),
                    "f": draw(st.sampled_from([-0.0, 0.0, math.nan, 1.5])),
                    "_wid_pane": base + draw(st.integers(-6, 6)) * draw(st.sampled_from([1, scale])),
                    "x": draw(VAL), "i": draw(st.one_of(st.none(), st.integers(-10**15, 10**15))),
                    "s": draw(st.one_of(st.none(), st.text("xyZé", max_size=3))),
                    "m": draw(st.one_of(st.none(), st.just(0.1), st.floats(-1e3, 1e3))),
                    "y": draw(st.one_of(st.none(), st.just(-7.3), st.floats(-50, 50)))})
    return out


def windows_of(q: int, spec: pm.MergeSpec, last: int) -> range:
    if spec.shape == "sliding":
        return range(-((spec.length - 1 + spec.offset - q) // spec.hop), (q - spec.offset) // spec.hop + 1)
    end = last if spec.period is None else min(last, (q // spec.period + 1) * spec.period - 1)
    return range(q, end + 1)


def inside(r: dict[str, Any], w: int, spec: pm.MergeSpec) -> bool:
    q = r["_wid_pane"]
    if spec.shape == "sliding":
        return w * spec.hop + spec.offset <= q <= w * spec.hop + spec.offset + spec.length - 1
    return q <= w and (spec.period is None or q // spec.period == w // spec.period)


def central(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))


def values(mine: list[dict[str, Any]]) -> dict[str, Any]:
    xs = [r["x"] for r in mine if r["x"] is not None]
    ints = [r["i"] for r in mine if r["i"] is not None]
    ss = [r["s"] for r in mine if r["s"] is not None]
    ms = [r["m"] for r in mine if r["m"] is not None]
    pairs = [(r["m"], r["y"]) for r in mine if r["m"] is not None and r["y"] is not None]
    px, py = [p[0] for p in pairs], [p[1] for p in pairs]
    return {"rows": len(mine), "nx": len(xs), "sx": sum(xs) if xs else None, "si": sum(ints) if ints else None,
            "lo": min(xs, key=spark_key) if xs else None, "hi": max(xs, key=spark_key) if xs else None,
            "smin": min(ss, key=lambda t: t.encode()) if ss else None, "imax": max(ints) if ints else None,
            "mn": len(ms), "mq": central(ms, ms) if ms else 0.0, "pn": len(pairs),
            "pqx": central(px, px) if pairs else 0.0, "pqy": central(py, py) if pairs else 0.0,
            "pc": central(px, py) if pairs else 0.0, "mag": sum(v * v for v in ms + py),
            # a constant side has exactly zero moments (corr and beta are NULL then, never noise)
            "exact": {"mq": len(set(ms)) <= 1, "pqx": len(set(px)) <= 1, "pqy": len(set(py)) <= 1,
                      "pc": len(set(px)) <= 1 or len(set(py)) <= 1}}


def key_of(r: dict[str, Any]) -> tuple[Any, ...]:
    """The group key as Spark groups it: -0.0 is 0.0, every NaN is one NaN."""
    return r["k"], r["g"], "NaN" if math.isnan(r["f"]) else r["f"] + 0.0


def brute(data: list[dict[str, Any]], spec: pm.MergeSpec, last: int) -> dict[tuple[Any, ...], dict[str, Any]]:
    out = {}
    for key in {key_of(r) for r in data}:
        mine = [r for r in data if key_of(r) == key]
        for w in {w for r in mine for w in windows_of(r["_wid_pane"], spec, last)}:
            out[(*key, w)] = values([r for r in mine if inside(r, w, spec)])
    return out


@settings(max_examples=300, deadline=None)
@given(rows(), st.sampled_from(["sliding", "cumulative"]), st.integers(1, 5), st.integers(1, 5),
       st.integers(-3, 3), st.sampled_from([None, 2, 4]), st.sampled_from([3, pr.CHUNK_ROWS]),
       st.sampled_from([0, pr.DENSE_SLACK]))
def test_fused_merge_equals_brute_force(data: list[dict[str, Any]], kind: str, a: int, b: int, off: int,
                                        period: int | None, chunk: int, slack: int) -> None:
    length, hop = max(a, b), min(a, b)
    last = max(r["_wid_pane"] for r in data) + 1
    assume(kind == "sliding" or last - min(r["_wid_pane"] for r in data) < 100)  # a window per pane up to last
    table = pa.Table.from_pylist([{**r, "_wid_last": last} for r in data], schema=SCHEMA)
    spec = pm.MergeSpec(keys=("k", "g", "f"), pane="_wid_pane", shape=kind, fields=FIELDS, length=length, hop=hop,
                        offset=off, period=period, last="_wid_last" if kind == "cumulative" else None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pr, "CHUNK_ROWS", chunk)
        mp.setattr(pr, "DENSE_SLACK", slack)  # 0: small key and pane ranges take the sorted path too
        got = {(*key_of(r), r[pm.WINDOW_ID]): r for b in pr.merge_rows(iter(table.to_batches(max_chunksize=4)), spec)
               for r in b.to_pylist()}
    want = brute(data, spec, last)
    assert got.keys() == want.keys()
    for key, expected in want.items():
        for name, value in expected.items():
            if name in MOMENTS and expected["exact"][name]:
                assert got[key][name] == 0.0, (key, name, got[key][name])
            elif name in MOMENTS:  # merged through shifted prefix sums: rounding relative to the squares
                assert math.isclose(got[key][name], value, rel_tol=1e-9, abs_tol=1e-9 * (1 + expected["mag"]))
            elif name not in ("mag", "exact"):
                assert same(got[key][name], value), (key, name, got[key][name], value)


def test_integer_overflow_raises() -> None:
    table = pa.table({"k": [1, 1], "_wid_pane": [0, 0], "i": [2**62, 2**62]})
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape="sliding", length=2,
                        fields=(pm.FieldOp("sum", ("i",), ("si",)),))
    with pytest.raises(ArithmeticError, match="overflow"):
        list(pr.merge_rows(iter(table.to_batches()), spec))


def test_no_rows_no_windows() -> None:
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape="sliding", fields=FIELDS[:1])
    assert list(pr.merge_rows(iter([]), spec)) == []


SHIPPED = """
import pickle, sys
sys.modules["wid"] = None  # an executor without wid: any import of it fails
merge, table = pickle.loads(sys.stdin.buffer.read())
sys.stdout.buffer.write(pickle.dumps([b.to_pylist() for b in merge(iter(table.to_batches()))]))
"""


def test_fused_merge_runs_on_executors_without_wid() -> None:
    # what arrow_merge ships to mapInArrow: the function, wid.kernels and wid.semantics by value
    import functools
    import pickle
    import subprocess
    import sys

    from pyspark import cloudpickle

    from wid.spark.shipping import ship

    ship()
    table = pa.table({"k": [1, 1, 2], "_wid_pane": [0, 3, 1], "x": [1.0, None, 2.5]})
    spec = pm.MergeSpec(keys=("k",), pane="_wid_pane", shape="sliding", length=2, fields=FIELDS[:3])
    merge = functools.partial(pr.merge_rows, spec=spec)
    done = subprocess.run([sys.executable, "-c", SHIPPED], input=cloudpickle.dumps((merge, table)),
                          capture_output=True, check=True)
    assert pickle.loads(done.stdout) == [b.to_pylist() for b in merge(iter(table.to_batches()))]
