"""The house's arrows (docs/architecture.md#layout): what each layer may
import, and what never happens. Read from the source, every import counted
(those inside functions too); a cycle is one of imports made at run time (a
name imported for annotations alone, under ``if TYPE_CHECKING:``, is
none)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from wid.spec.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
MODULES = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
           for p in ROOT.glob("wid/**/*.py")}


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes under ``if TYPE_CHECKING:``: names for
    annotations, which Python never imports at run time."""
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    return {id(inner) for b in blocks for n in b.body for inner in ast.walk(n)}


def imported_modules(path: Path, at_run_time: bool = False) -> set[str]:
    """Every module `path` imports: ``import a.b``, ``from a import b``
    (``a.b`` when that is a module of wid, else ``a``); with `at_run_time`,
    not those imported for annotations alone (``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_only(tree) if at_run_time else set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = {f"{node.module}.{a.name}" for a in node.names} & set(MODULES)
            out |= subs or {node.module}
    return out


def wid_imports(module: str) -> set[str]:
    """The modules of wid that `module` imports at run time."""
    return {m for m in imported_modules(MODULES[module], at_run_time=True) if m in MODULES and m != module}


def layer(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


def offenders(modules: list[str], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for module in modules:
        bad = sorted(m for m in imported_modules(MODULES[module])
                     if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            found[module] = bad
    return found


# The floors of docs/architecture.md#layout, from the ground up. A module may import modules of its own
# floor and of the floors below, never of one above. A name stands for the module and, for a package, all
# its modules; the root package ``wid`` (the Python API) for itself only.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("wid.errors", "wid.versions", "wid.terminal"),  # the ground: what every floor may use
    ("wid.spec",),
    ("wid.semantics",),
    ("wid.kernels",),      # executor code: semantics below it, nothing of the driver
    ("wid.aggregates",),   # its Spark forms give the kernels' merges their fields (wid.kernels.pane_merge.FieldOp)
    ("wid.spark",),
    ("wid.io",),           # in truth beside the plans: neither imports the other (see below)
    ("wid.pipelines",),
    ("wid", "wid.__main__", "wid.cli", "wid.cli_report", "wid.cli_status", "wid.doctor", "wid.progress", "wid.spark_output"),
)


def floor_of(module: str) -> int | None:
    """The floor (index into `FLOORS`) of `module`, None if it has none."""
    for i, names in enumerate(FLOORS):
        if any(module == n or (n != "wid" and module.startswith(n + ".")) for n in names):
            return i
    return None


def test_every_module_stands_on_a_floor() -> None:
    # a new module outside the packages is placed in FLOORS (and in docs/architecture.md's table)
    assert sorted(m for m in MODULES if floor_of(m) is None) == []


def test_no_import_runs_from_a_lower_floor_to_a_higher_one() -> None:
    up = sorted(f"{m} -> {n}" for m in MODULES for n in wid_imports(m)
                if (floor_of(n) or 0) > (floor_of(m) or 0))
    assert up == []


def test_metrics_live_under_pipelines() -> None:
    # they account a pipeline's micro-batches (wid.pipelines.report's tallies), and pipelines feed them
    assert "wid.pipelines.metrics" in MODULES and "wid.metrics" not in MODULES


def test_io_and_the_plans_import_nothing_of_each_other() -> None:
    # io moves rows in and out: a source column or Spark SQL's quoting it needs stands below both (wid.spec)
    assert layer("wid.io") and layer("wid.spark")
    assert offenders(layer("wid.io"), ("wid.spark", "wid.kernels", "wid.aggregates")) == {}
    assert offenders(layer("wid.spark"), ("wid.io",)) == {}


def test_the_driver_reads_the_operator_s_rows_through_one_module() -> None:
    # wid.kernels.operator.output is executor code; on the driver, only the operator's glue names it, and
    # everything else reads the rows through wid.spark.operator.rows
    readers = [m for m in MODULES if not m.startswith(("wid.kernels.", "wid.spark.operator."))]
    assert "wid.spark.operator.rows" in MODULES
    assert offenders(readers, ("wid.kernels.operator.output",)) == {}


def test_spec_and_semantics_import_no_engine() -> None:
    engines = ("pyspark", "wid.spark", "wid.kernels", "wid.io", "wid.pipelines", "wid.cli")
    assert layer("wid.spec") and layer("wid.semantics")
    assert offenders(layer("wid.spec") + layer("wid.semantics"), engines) == {}


def test_kernels_import_no_pyspark_and_nothing_of_wid_but_kernels_and_semantics() -> None:
    assert layer("wid.kernels")
    assert offenders(layer("wid.kernels"), ("pyspark", "wid.spark", "wid.spec", "wid.io", "wid.pipelines",
                                            "wid.aggregates")) == {}


def test_no_spark_plan_imports_the_chooser_or_a_pipeline() -> None:
    plans = [m for m in layer("wid.spark") if m not in ("wid.spark.api", "wid.spark.compile", "wid.spark.explain")]
    assert offenders(plans, ("wid.spark.api", "wid.spark.compile", "wid.pipelines", "wid.cli")) == {}


def test_the_import_graph_has_no_cycle() -> None:
    graph = {m: wid_imports(m) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph[module]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt] if nxt in path else [module, nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_importing_the_specs_does_not_load_pyspark() -> None:
    code = "import sys, wid, wid.semantics, wid.aggregates.pure; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


JVM_ATTRIBUTES = {"sparkContext", "_jvm", "_jsc", "_jdf", "_jsparkSession", "_jconf", "_sc"}


def test_nothing_in_wid_reaches_for_the_driver_s_jvm() -> None:
    # Spark Connect clients have no JVM: every call goes through the session's public API
    found = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in JVM_ATTRIBUTES}
                       | {"SparkContext" for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "SparkContext"})
        if names:
            found[module] = names
    assert found == {}
    assert offenders(list(MODULES), ("py4j",)) == {}


WINDOW_KINDS = set(KINDS)


def _kind_names(node: ast.AST, named: set[str]) -> bool:
    """Whether `node` is a window kind's name, a collection of them, or a
    module-level name bound to such a collection."""
    if isinstance(node, ast.Constant):
        return node.value in WINDOW_KINDS
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return bool(node.elts) and all(_kind_names(e, named) for e in node.elts)
    return isinstance(node, ast.Name) and node.id in named


def kind_tests(path: Path) -> list[str]:
    """The tests of a window kind's name in `path`: comparisons (``==``,
    ``!=``, ``in``) of an expression naming a kind (``w.kind``,
    ``spec.kind``) with kind names, and ``match`` cases on them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    named = {t.id for n in tree.body if isinstance(n, ast.Assign) and _kind_names(n.value, set())
             for t in n.targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = [s for s in sides if _kind_names(s, named)]
            if names and any("kind" in ast.unparse(s) for s in sides if s not in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        elif isinstance(node, ast.Match) and "kind" in ast.unparse(node.subject):
            found += [f"{path.relative_to(ROOT)}:{c.pattern.lineno}" for c in node.cases
                      if isinstance(c.pattern, ast.MatchValue) and _kind_names(c.pattern.value, named)]
    return found


def test_a_window_kind_is_a_type_not_a_name_the_house_branches_on() -> None:
    # each kind is declared once per layer, its parts looked up by name in one registry per layer
    # (docs/architecture.md#window-kinds): a kind's name is tested in a few places at most
    found = [t for path in MODULES.values() for t in kind_tests(path)]
    assert len(found) <= 12 and len({t.split(":")[0] for t in found}) <= 4, found


FIRING_WORDS = {"on_update", "on_close", "reopen", "emit_mode", "late_mode", "generous", "consistent", "allowed_us"}


def _code_words(path: Path) -> set[str]:
    """The names, attributes and string constants of `path`'s code, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            words.add(node.value)
    return words


def test_firing_rules_exist_once() -> None:
    # the kinds' engines and oracle rules say which windows a row falls in, when they close and which a
    # micro-batch touched; the trigger policy (wid.semantics.trigger) alone decides what fires, whether it is
    # final and what is late: no engine or rules module names an emit mode, reopen or a late mode
    kinds = [p for name, p in MODULES.items() if name.startswith("wid.semantics.kinds.") or (
        name.startswith("wid.kernels.operator.") and name.endswith("_engine") and name != "wid.kernels.operator.join_engine")]
    assert len(kinds) >= 10
    found = {str(p.relative_to(ROOT)): sorted(_code_words(p) & FIRING_WORDS) for p in kinds}
    assert {k: v for k, v in found.items() if v} == {}
    assert {"on_update", "late_mode", "allowed_us"} <= _code_words(MODULES["wid.semantics.trigger"])
