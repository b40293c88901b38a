"""The dashboard and alert rules of docs/how-to/monitoring.md: every
expression parses as PromQL (promql-parser, the Rust parser Prometheus's
own grammar is ported to), and every metric it names is one a pipeline's
`wid.pipelines.metrics.Metrics` serves, with a micro-batch fed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import promql_parser
import pytest
import yaml

from wid.pipelines.metrics import Metrics
from wid.pipelines.report import BatchTally

HERE = Path(__file__).parents[2] / "docs" / "how-to" / "monitoring"
NAME = re.compile(r"\bwid_[a-z_]+\b")


def served() -> set[str]:
    """The sample names a fed `Metrics` serves (counters' ``_total``, histograms' ``_bucket``...)."""
    metrics = Metrics("p", "tumbling", "drop", ("a", "b"), trigger_s=60)

    class Progress:
        stateOperators: list[object] = []
    metrics.batch(BatchTally(0, 10, 9, 1, 8, 1_000, duration_ms=1_500, source_watermarks_ms=(("a", 1_000),)),
                  Progress())
    return {s.name for family in metrics.registry.collect() for s in family.samples}


def dashboard_exprs() -> list[str]:
    doc = json.loads((HERE / "grafana-dashboard.json").read_text(encoding="utf-8"))
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def rules() -> list[dict[str, object]]:
    doc = yaml.safe_load((HERE / "alert-rules.yml").read_text(encoding="utf-8"))
    return [r for g in doc["groups"] for r in g["rules"]]


def grafana_free(expr: str) -> str:
    """A dashboard's expression with Grafana's variables as the values they take."""
    return expr.replace("$job", ".*")


@pytest.mark.parametrize("expr", [*dashboard_exprs(), *(str(r["expr"]) for r in rules())])
def test_every_expression_parses_and_names_served_metrics(expr: str) -> None:
    promql_parser.parse(grafana_free(expr))
    names = set(NAME.findall(expr))
    assert names and names <= served(), names - served()


def test_every_rule_says_what_to_do() -> None:
    found = rules()
    assert len({r["alert"] for r in found}) == len(found) >= 5
    for rule in found:
        assert rule["labels"]["severity"] in ("warning", "critical"), rule  # type: ignore[index]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule  # type: ignore[index]
    page = (HERE.parent / "monitoring.md").read_text(encoding="utf-8")
    assert all(f"`{r['alert']}`" in page for r in found)


def test_the_page_lists_every_metric() -> None:
    page = (HERE.parent / "monitoring.md").read_text(encoding="utf-8")
    families = {f.name for f in Metrics("p", "tumbling", "drop").registry.collect()}
    for family in families:
        assert re.search(rf"`{family}(_total)?(\{{[a-z]+\}})?`", page), family
