"""Spark forms of the aggregators: column expressions for each stage of a plan.

Every aggregation compiles to named *fields* (plain Spark columns) in five
steps, the column-expression form of ``zero / add / merge / finish``:

- `partial()`: aggregate expressions over input rows (one extent, or one pane).
  `row_partial()` gives the same fields for a group of one row, as row
  expressions (no aggregate), for plans whose groups are single rows (the
  window join's right rows).
- `running(f)`: aggregate expressions over partial rows that merge them; valid
  both in a ``groupBy`` and in a running (unbounded preceding) window frame.
  `shift(f)` optionally supplies per-block constants the running merge needs.
- `settle(f)`: row expressions turning a running result into a contribution.
- `combine(f, role)`: aggregate expressions merging at most two contributions
  of one window (`role` is True for the suffix one; see `wid.spark.panes`).
- `finish(f)`: the output value.

The fused vectorised merge (`wid.kernels.pane_reduce`) skips the Spark
aggregates: `row_values()` are per-row columns and `row_ops(name)` the ops
reducing them to panes, then windows (a row is a pane of one row).

`f(name)` returns the column holding field `name` of this aggregation in the
current stage. Partial fields are bare aggregate calls, so they also work as
window functions (``.over(frame)``). Direct (one-level) evaluation is
`value(agg, f)`: ``finish(direct(partial fields))``.

Semantics follow `wid.semantics.aggregate_values`; undefined statistics are
NULL (never NaN or an ANSI division error). Variance-type moments keep central
moments per pane (Spark's stable `var_pop`/`covar_pop`) and merge as sums
shifted by a per-block constant, then with Chan et al.'s pairwise formula, so
they stay accurate when the mean is large relative to the spread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pyspark.sql import Column, WindowSpec
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.kernels.pane_merge import FieldOp
from wid.spec.aggregation import Aggregation

Fields = dict[str, Column]
Getter = Callable[[str], Column]
HLL_LG_K = 14  # docs/semantics.md#aggregations: precision 14, about 0.81 % standard error


@dataclass(frozen=True)
class Inputs:
    """What the expressions read: the input column types, the event time in
    microseconds (`ts_us`), the optional tie-breaker and what makes a string
    column describing the current window for cap errors (`where`; called
    only by an aggregation with a cap, as each Column costs the driver
    round trips to the JVM)."""

    types: dict[str, T.DataType]
    ts_us: Column
    tie_breaker: Column | None = None
    where: Callable[[], Column] | None = None


class SparkAgg:
    """Base class: a mergeable aggregation whose partial fields merge by
    `_merge_ops` (``{field: "sum" | "min" | "max" | "hll"}``)."""

    def __init__(self, agg: Aggregation, inputs: Inputs) -> None:
        self.agg = agg
        self.inputs = inputs
        self._partial: Fields | None = None

    @property
    def x(self) -> Column:
        return F.col(self.agg.column or "")

    @property
    def y(self) -> Column:
        return F.col(self.agg.column2 or "")

    def partial(self) -> Fields:
        """The partial fields' aggregate expressions, by field name; built
        once (a Column may serve in several plans, and each one built costs
        the driver round trips to the JVM)."""
        if self._partial is None:
            self._partial = self._fields()
        return self._partial

    def _fields(self) -> Fields:
        raise NotImplementedError

    def _merge_ops(self) -> dict[str, str]:
        raise NotImplementedError

    def finish(self, f: Getter) -> Column:
        raise NotImplementedError

    def direct(self, f: Getter) -> Fields:
        """Partial fields -> the fields `finish` reads (identity by default)."""
        return {k: f(k) for k in self.partial()}

    def value(self, f: Getter) -> Column:
        """The output value evaluated directly from the partial fields `f`
        (of rows aggregated at once, not merged): ``finish(direct(f))``."""
        fields = self.direct(f)
        return self.finish(lambda name: fields[name])

    def shift(self, f: Getter) -> Fields:
        return {}

    def vector_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        """The fields' ops for the vectorised pane merge (`wid.kernels.pane_merge`);
        `name(field, stage)` gives column names. None when a field can only
        merge inside the JVM (HLL sketches) or not at all (holistic)."""
        ops = self._merge_ops()
        if "hll" in ops.values():
            return None
        return [FieldOp(op, (name(k, "p"),), (name(k, "m"),)) for k, op in ops.items()]

    def row_values(self) -> Fields:
        """Per-row values whose merge by `_merge_ops` over a pane's rows is
        `partial()` (the expressions inside the partial aggregates)."""
        raise NotImplementedError

    def row_partial(self) -> Fields:
        """`partial()` of a group holding one row, as row expressions.

        Raises:
            TypeError: the aggregation has no row form (sketches, holistic).
        """
        raise TypeError(f"'{self.agg.agg}' has no row form")

    def row_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        """Ops of the fused merge from `row_values` (columns ``name(k, "r")``)
        to the merged fields (``name(k, "m")``); None as for `vector_ops`."""
        ops = self._merge_ops()
        if "hll" in ops.values():
            return None
        return [FieldOp(op, (name(k, "r"),), (name(k, "m"),)) for k, op in ops.items()]

    def running(self, f: Getter) -> Fields:
        return {k: _merge(op, f(k)) for k, op in self._merge_ops().items()}

    def settle(self, f: Getter) -> Fields:
        return {k: f(k) for k in self._merge_ops()}

    def combine(self, f: Getter, role: Column) -> Fields:
        return self.running(f)


def _counted(col: Column) -> Column:
    """``count(col)`` over one row: 1, or 0 when the value is NULL."""
    return F.when(col.isNotNull(), F.lit(1)).otherwise(F.lit(0)).cast("long")


def _merge(op: str, col: Column) -> Column:
    if op == "hll":
        return F.hll_union_agg(col)
    return {"sum": F.sum, "min": F.min, "max": F.max}[op](col)


class Count(SparkAgg):
    def _fields(self) -> Fields:
        return {"n": F.count(F.lit(1) if self.agg.column is None else self.x)}

    def _merge_ops(self) -> dict[str, str]:
        return {"n": "sum"}

    def row_values(self) -> Fields:
        return {} if self.agg.column is None else {"x": self.x}

    def row_partial(self) -> Fields:
        return {"n": _counted(F.lit(1) if self.agg.column is None else self.x)}

    def row_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        return [FieldOp("count", tuple(name(k, "r") for k in self.row_values()), (name("n", "m"),))]

    def finish(self, f: Getter) -> Column:
        return F.coalesce(f("n"), F.lit(0)).cast("long")

    def value(self, f: Getter) -> Column:
        return f("n")  # Spark's count: a long, never NULL; only a merge over no panes needs `finish`


class Simple(SparkAgg):
    """sum, sum2, min, max, wsum: one field merged by one operator."""

    def _value(self) -> Column:
        name = self.agg.agg
        if name == "sum2":
            return self.x.cast("double") * self.x.cast("double")
        if name == "wsum":
            return self.x.cast("double") * self.y.cast("double")
        return self.x

    def _op(self) -> str:
        return {"sum": "sum", "sum2": "sum", "wsum": "sum", "min": "min", "max": "max"}[self.agg.agg]

    def _fields(self) -> Fields:
        return {"v": _merge(self._op(), self._value())}

    def row_values(self) -> Fields:
        return {"v": self._value()}

    def row_partial(self) -> Fields:
        t = self.inputs.types.get(self.agg.column or "")
        if self.agg.agg == "sum" and isinstance(t, T.IntegralType | T.FloatType | T.DoubleType):
            return {"v": self.x.cast("long" if isinstance(t, T.IntegralType) else "double")}  # Spark's sum types
        return self.row_values()

    def _merge_ops(self) -> dict[str, str]:
        return {"v": self._op()}

    def finish(self, f: Getter) -> Column:
        return f("v")


class Avg(SparkAgg):
    """avg(x) = sum/count; wavg(x, w) = sum(x*w)/sum(w) over non-null pairs."""

    def row_values(self) -> Fields:
        """``s``: x (or x*w), ``n``: w for wavg (for avg, n counts ``s``)."""
        if self.agg.agg == "wavg":
            both = self.x.isNotNull() & self.y.isNotNull()
            x, w = self.x.cast("double"), self.y.cast("double")
            return {"s": F.when(both, x * w), "n": F.when(both, w)}
        x = self.x if isinstance(self.inputs.types.get(self.agg.column or ""), T.DoubleType) else self.x.cast("double")
        return {"s": x}

    def _fields(self) -> Fields:
        values = self.row_values()
        return {"s": F.sum(values["s"]), "n": F.sum(values["n"]) if "n" in values else F.count(self.x)}

    def row_partial(self) -> Fields:
        values = self.row_values()
        return {"s": values["s"], "n": values["n"] if "n" in values else _counted(self.x)}

    def _merge_ops(self) -> dict[str, str]:
        return {"s": "sum", "n": "sum"}

    def row_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        if self.agg.agg == "wavg":
            return super().row_ops(name)
        return [FieldOp("sum", (name("s", "r"),), (name("s", "m"),)),
                FieldOp("count", (name("s", "r"),), (name("n", "m"),))]

    def finish(self, f: Getter) -> Column:
        return F.try_divide(f("s"), f("n").cast("double"))  # NULL where n = 0


class FirstLast(SparkAgg):
    """first/last by event time: min/max of struct(ts, tie-breaker, value)
    over rows with a non-null value (ties resolved by the value itself)."""

    def row_values(self) -> Fields:
        parts = [self.inputs.ts_us.alias("t")]
        if self.inputs.tie_breaker is not None:
            parts.append(self.inputs.tie_breaker.alias("b"))
        return {"k": F.when(self.x.isNotNull(), F.struct(*parts, self.x.alias("v")))}

    def _fields(self) -> Fields:
        return {"k": _merge(self._op(), self.row_values()["k"])}

    def row_partial(self) -> Fields:
        return self.row_values()

    def _op(self) -> str:
        return "min" if self.agg.agg == "first" else "max"

    def _merge_ops(self) -> dict[str, str]:
        return {"k": self._op()}

    def finish(self, f: Getter) -> Column:
        return f("k").getField("v")

    def in_order(self, frame: WindowSpec) -> Column:
        """The value over a window function `frame` whose order is event
        time, then the tie-breaker, then this value (what `_fields` orders
        by): Spark's ``first``/``last`` skipping NULLs, cheaper than the
        struct's min/max."""
        pick = F.first if self.agg.agg == "first" else F.last
        return pick(self.x, ignorenulls=True).over(frame)


class ApproxDistinct(SparkAgg):
    """count_distinct, approximate: Spark's mergeable HLL sketches at lgK 14."""

    def _hashable(self) -> Column:
        t = self.inputs.types[self.agg.column or ""]
        if isinstance(t, T.IntegerType | T.LongType | T.StringType | T.BinaryType):
            return self.x
        if isinstance(t, T.ByteType | T.ShortType | T.BooleanType | T.DateType):
            return self.x.cast("int")
        if isinstance(t, T.TimestampType | T.TimestampNTZType):
            return F.unix_micros(self.x.cast("timestamp"))
        if isinstance(t, T.FloatType | T.DoubleType):
            value = self.x.cast("double") + F.lit(0.0)  # -0.0 and 0.0 count once, as in SQL
            return F.when(self.x.isNotNull(), F.xxhash64(value))
        return F.when(self.x.isNotNull(), F.xxhash64(self.x))

    def _fields(self) -> Fields:
        return {"h": F.hll_sketch_agg(self._hashable(), HLL_LG_K)}

    def _merge_ops(self) -> dict[str, str]:
        return {"h": "hll"}

    def finish(self, f: Getter) -> Column:
        return F.hll_sketch_estimate(f("h"))


class Holistic(SparkAgg):
    """med, percentile and exact count_distinct: evaluated directly over each
    extent (their state grows with the data, so they have no pane form)."""

    def _fields(self) -> Fields:
        name = self.agg.agg
        if name == "count_distinct":
            return {"set": F.collect_set(self.x)}
        p = 0.5 if name == "med" else (self.agg.percent or 0.0) / 100.0
        return {"p": F.percentile(self.x.cast("double"), F.lit(p))}

    def _merge_ops(self) -> dict[str, str]:
        raise TypeError(f"'{self.agg.agg}' is holistic and has no merge form")

    def vector_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        return None

    def row_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        return None

    def finish(self, f: Getter) -> Column:
        if self.agg.agg != "count_distinct":
            return f("p")
        size = F.size(f("set")).cast("long")
        cap = self.agg.max_distinct_values_per_group or 0
        where = self.inputs.where() if self.inputs.where is not None else F.lit("a window")
        message = F.concat(
            F.lit(f"distinct-value cap hit: max_distinct_values_per_group={cap} reached by "
                  f"aggregation '{self.agg.as_}' in "), where)
        return F.when(size > cap, F.raise_error(message).cast("long")).otherwise(size)


class Moments(SparkAgg):
    """var, std (one column) and covar, corr, beta (two columns).

    Pane fields: n, means, central second moments (Spark's `var_pop`,
    `covar_pop` times n). Running merge: sums shifted by the block's first
    pane means ``c``. Contributions are settled back to central moments and
    combined pairwise (Chan et al.)."""

    @property
    def paired(self) -> bool:
        return self.agg.column2 is not None

    def _cols(self) -> tuple[Column, Column]:
        if not self.paired:
            return self.x.cast("double"), self.x.cast("double")
        both = self.x.isNotNull() & self.y.isNotNull()
        return F.when(both, self.x.cast("double")), F.when(both, self.y.cast("double"))

    def _fields(self) -> Fields:
        x, y = self._cols()
        out = {"n": F.count(x), "mx": F.avg(x), "vx": F.var_pop(x)}
        if self.paired:
            out.update({"my": F.avg(y), "vy": F.var_pop(y), "vxy": F.covar_pop(x, y)})
        return out

    def direct(self, f: Getter) -> Fields:
        n = f("n").cast("double")
        out = {"n": f("n"), **{f"q{s}": f(f"v{s}") * n for s in self._sides()}}
        if self.paired:
            out["cxy"] = f("vxy") * n
        return out

    def _sides(self) -> tuple[str, ...]:
        return ("x", "y") if self.paired else ("x",)

    def shift(self, f: Getter) -> Fields:
        return {f"c{s}": F.first(f(f"m{s}"), ignorenulls=True) for s in self._sides()}

    def running(self, f: Getter) -> Fields:
        n = F.coalesce(f("n"), F.lit(0))
        d = {s: F.coalesce(f(f"m{s}") - f(f"c{s}"), F.lit(0.0)) for s in self._sides()}
        out = {"n": F.sum(n)}
        for s in self._sides():
            out[f"s{s}"] = F.sum(n * d[s])
            out[f"q{s}"] = F.sum(F.coalesce(f(f"v{s}"), F.lit(0.0)) * n + n * d[s] * d[s])
        if self.paired:
            out["cxy"] = F.sum(F.coalesce(f("vxy"), F.lit(0.0)) * n + n * d["x"] * d["y"])
        return out

    def settle(self, f: Getter) -> Fields:
        n = f("n").cast("double")
        nz = F.when(n > 0, n)
        out: Fields = {"n": f("n")}
        for s in self._sides():
            mean_d = F.try_divide(f(f"s{s}"), nz)
            out[f"m{s}"] = f(f"c{s}") + mean_d
            out[f"q{s}"] = f(f"q{s}") - f(f"s{s}") * mean_d
        if self.paired:
            out["cxy"] = f("cxy") - f("sx") * F.try_divide(f("sy"), nz)
        return out

    def combine(self, f: Getter, role: Column) -> Fields:
        def side(name: str, is_suffix: bool) -> Column:
            return F.max(F.when(role == F.lit(is_suffix), f(name)))

        na = F.coalesce(side("n", True), F.lit(0)).cast("double")
        nb = F.coalesce(side("n", False), F.lit(0)).cast("double")
        n = na + nb
        weight = F.try_divide(na * nb, F.when(n > 0, n))
        out: Fields = {"n": F.sum(f("n"))}
        deltas = {}
        for s in self._sides():
            ma, mb = side(f"m{s}", True), side(f"m{s}", False)
            deltas[s] = F.coalesce(mb - ma, F.lit(0.0))
            out[f"m{s}"] = F.coalesce(ma + deltas[s] * F.try_divide(nb, F.when(n > 0, n)), mb)
            out[f"q{s}"] = F.sum(f(f"q{s}")) + F.coalesce(deltas[s] * deltas[s] * weight, F.lit(0.0))
        if self.paired:
            out["cxy"] = F.sum(f("cxy")) + F.coalesce(deltas["x"] * deltas["y"] * weight, F.lit(0.0))
        return out

    def _merge_ops(self) -> dict[str, str]:
        raise TypeError("moments merge through running/settle/combine")

    def vector_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        ins = ["n", "mx", "vx"] + (["my", "vy", "vxy"] if self.paired else [])
        return [FieldOp("moments", tuple(name(k, "p") for k in ins), self._outputs(name))]

    def _outputs(self, name: Callable[[str, str], str]) -> tuple[str, ...]:
        return tuple(name(k, "m") for k in ["n", "qx"] + (["qy", "cxy"] if self.paired else []))

    def row_values(self) -> Fields:
        x, y = self._cols()
        return {"x": x, "y": y} if self.paired else {"x": x}

    def row_partial(self) -> Fields:
        x, y = self._cols()
        out = {"n": _counted(x), "mx": x, "vx": F.when(x.isNotNull(), F.lit(0.0))}  # one value: no spread
        if self.paired:
            out.update({"my": y, "vy": F.when(y.isNotNull(), F.lit(0.0)), "vxy": F.when(x.isNotNull(), F.lit(0.0))})
        return out

    def row_ops(self, name: Callable[[str, str], str]) -> list[FieldOp] | None:
        return [FieldOp("moments", tuple(name(k, "r") for k in self.row_values()), self._outputs(name))]

    def finish(self, f: Getter) -> Column:
        n = f("n").cast("double")
        ok = n >= 2
        name = self.agg.agg
        if name in ("var", "std"):
            var = F.greatest(f("qx"), F.lit(0.0)) / (n - 1)
            return F.when(ok, var if name == "var" else F.sqrt(var))
        if name == "covar":
            return F.when(ok, f("cxy") / (n - 1))
        if name == "corr":
            good = ok & (f("qx") > 0) & (f("qy") > 0)
            return F.when(good, f("cxy") / F.sqrt(f("qx") * f("qy")))
        # beta(Y=column, X=column2): slope of Y on X = cov / var(X); X is the `y` slot
        return F.when(ok & (f("qy") > 0), f("cxy") / f("qy"))


def value(agg: SparkAgg, f: Getter) -> Column:
    """The output value of `agg` evaluated directly from its partial fields
    (`SparkAgg.value`)."""
    return agg.value(f)


def spark_agg(agg: Aggregation, inputs: Inputs) -> SparkAgg:
    """The Spark form of `agg`."""
    name = agg.agg
    if agg.holistic:
        return Holistic(agg, inputs)
    if name == "count":
        return Count(agg, inputs)
    if name in ("first", "last"):
        return FirstLast(agg, inputs)
    if name in ("avg", "wavg"):
        return Avg(agg, inputs)
    if name == "count_distinct":
        return ApproxDistinct(agg, inputs)
    if name in ("var", "std", "covar", "corr", "beta"):
        return Moments(agg, inputs)
    return Simple(agg, inputs)


def result_type(agg: Aggregation, types: Mapping[str, T.DataType]) -> T.DataType:
    """The type of `agg`'s output over input columns of `types`, as the
    forms above give it (Spark's own rules where they apply): a count is a
    long; ``sum`` keeps Spark's sum type (long for integers, double for
    floating point, decimal(p + 10, s) for decimals); ``min``, ``max``,
    ``first`` and ``last`` keep the column's type; every statistic and order
    statistic is a double. Plans whose output schema Spark cannot derive
    before running (the WID operator's) state it with this."""
    name = agg.agg
    if name in ("count", "count_distinct"):
        return T.LongType()
    column = types[agg.column or ""]
    if name in ("min", "max", "first", "last"):
        return column
    if name == "sum":
        if isinstance(column, T.IntegralType):
            return T.LongType()
        if isinstance(column, T.DecimalType):
            return T.DecimalType(min(column.precision + 10, 38), column.scale)
    return T.DoubleType()
