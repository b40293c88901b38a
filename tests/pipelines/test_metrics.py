"""Prometheus metrics of a streaming pipeline, scraped over HTTP and checked
against the data fed: rows in, rejected and late rows, windows written and
the watermark."""

from __future__ import annotations

import json
import socket
import sqlite3
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures import good_rows, land, write_pipeline
from wid.pipelines.metrics import Metrics
from wid.pipelines.run import run as run_stream
from wid.spec.toml_io import load_pipeline


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_endpoint_reports_what_was_fed(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(30)
    late = {"k": "a", "ts": rows[0]["ts"] - 60_000, "v": 1.0}
    files = [[json.dumps(r) for r in rows[i:i + 10]] for i in range(0, 30, 10)]
    files[2] += [json.dumps(late), '{"k": "a", "ts": null, "v": 1.0}']
    land(tmp_path / "land", files)
    spec = load_pipeline(write_pipeline(tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    metrics = Metrics(spec.name, spec.window.kind, spec.window.late_data)
    metrics.serve(port)
    report = run_stream(spec, spark, metrics=metrics)
    got = scrape(port)

    with closing(sqlite3.connect(tmp_path / "out.sqlite")) as con:
        written = con.execute("SELECT count(*) FROM windows").fetchone()[0]
    assert got[("wid_rows_in_total", ())] == 32
    assert got[("wid_rows_rejected_total", ())] == 1
    assert got[("wid_late_rows_total", (("policy", "drop"),))] == 1
    assert got[("wid_windows_emitted_total", (("kind", "tumbling"),))] == written == report.windows_emitted > 0
    # the watermark gauge (epoch seconds), globally and for the one source
    watermarks = {dict(labels)["source"]: v for (name, labels), v in got.items() if name == "wid_watermark_seconds"}
    expected = (max(r["ts"] for r in rows) - spec.window.lateness_ms) / 1000
    assert watermarks == {"_global": expected, "source": expected}
    assert got[("wid_windows_active", ())] >= 0 and got[("wid_state_groups", ())] >= got[("wid_windows_active", ())]


def test_operator_metrics_per_source_and_policy(spark: Any, tmp_path: Path) -> None:
    """On the WID operator (late_data = dlq, two sources): late rows counted
    under their policy, each source's own watermark and the global minimum,
    and the windows and groups the shards hold."""
    from wid.spec.toml_io import loads_pipeline

    ahead, behind = good_rows(30), good_rows(10)
    land(tmp_path / "land", [[json.dumps(r) for r in ahead[:20]], [json.dumps(r) for r in ahead[20:]]
                             + [json.dumps({"k": "a", "ts": ahead[0]["ts"] - 120_000, "v": 1.0})]])
    land(tmp_path / "land2", [[json.dumps(r) for r in behind]])
    text = write_pipeline(tmp_path).read_text().replace("max_groups_per_window = 1000",
                                                        'max_groups_per_window = 1000\nlate_data = "dlq"')
    text = text.replace("[source]", "[[source]]")
    second = text[text.index("[[source]]"):text.index("[transform.window]")].replace('path = "land"', 'path = "land2"')
    text = text.replace("[transform.window]", second + 'name = "second"\n\n[transform.window]', 1)
    spec = loads_pipeline(text, base_dir=str(tmp_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    metrics = Metrics(spec.name, spec.window.kind, spec.window.late_data, tuple(s.name for s in spec.sources))
    metrics.serve(port)
    report = run_stream(spec, spark, metrics=metrics)
    got = scrape(port)
    assert report.identity_holds and report.total("rows_late_dlq") == 1
    assert got[("wid_late_rows_total", (("policy", "dlq"),))] == 1
    assert got[("wid_rows_in_total", ())] == 41
    watermarks = {dict(labels)["source"]: v for (name, labels), v in got.items() if name == "wid_watermark_seconds"}
    lateness = spec.window.lateness_ms
    assert watermarks == {"source": (max(r["ts"] for r in ahead) - lateness) / 1000,
                          "second": (max(r["ts"] for r in behind) - lateness) / 1000,
                          "_global": (max(r["ts"] for r in behind) - lateness) / 1000}
    assert got[("wid_state_groups", ())] >= got[("wid_windows_active", ())] > 0
