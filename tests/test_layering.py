"""The house's arrows (docs/architecture.md#layout): what each layer may
import, and what never happens. Read from the source, every import counted
(those inside functions too)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
           for p in ROOT.glob("wid/**/*.py")}


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports: ``import a.b``, ``from a import b``
    (``a.b`` when that is a module of wid, else ``a``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            subs = {f"{node.module}.{a.name}" for a in node.names} & set(MODULES)
            out |= subs or {node.module}
    return out


def wid_imports(module: str) -> set[str]:
    return {m for m in imported_modules(MODULES[module]) if m in MODULES and m != module}


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


def test_spec_and_semantics_import_no_engine() -> None:
    engines = ("pyspark", "wid.spark", "wid.kernels", "wid.io", "wid.pipelines", "wid.cli", "wid.metrics")
    assert layer("wid.spec") and layer("wid.semantics")
    assert offenders(layer("wid.spec") + layer("wid.semantics"), engines) == {}


def test_kernels_import_no_pyspark_and_nothing_of_wid_but_kernels_and_semantics() -> None:
    assert layer("wid.kernels")
    assert offenders(layer("wid.kernels"), ("pyspark", "wid.spark", "wid.spec", "wid.io", "wid.pipelines",
                                            "wid.aggregates")) == {}


def test_no_spark_plan_imports_the_chooser_or_a_pipeline() -> None:
    plans = [m for m in layer("wid.spark") if m not in ("wid.spark.compile", "wid.spark.explain")]
    assert offenders(plans, ("wid.spark.compile", "wid.pipelines", "wid.cli")) == {}


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
