"""The example declarative pipeline (examples/flights_dp, the layout
``spark-pipelines init`` makes), checked by ``spark-pipelines dry-run`` and
run by ``spark-pipelines run`` against a Spark Connect server started here,
over a few landed files of the real departures (cancelled flights and
departures held back past the lateness among them, two micro-batches):

- its hourly windows and dead letters equal what ``wid run`` of
  flights_stream.toml (the same window) writes from the same files, and the
  streaming oracle's; its row accounting is the oracle's, micro-batch by
  micro-batch, and the identity holds in its SQL file's totals;
- the WID operator's state exists once per streaming window: one
  checkpoint with state, of one stateful operator, for each;
- the per-carrier window updated while its hour is open (its changelog's
  latest values) is what a keyed sink holds after the oracle's emissions;
- the calendar-day report is the batch oracle's; the JSON sink holds the
  final hourly windows.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyspark
import pytest

from tests.fixtures import stamped
from tests.sink_check import canonical, dead_letters, iso, read_table
from tests.spark.compare import assert_same, collect
from tools import spark_servers
from wid import Aggregation, Window
from wid.semantics import evaluate
from wid.semantics.sink_state import sink_rows
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import load_pipeline

ROOT = Path(__file__).resolve().parents[1]
SPARK_PIPELINES = Path(sys.executable).parent / "spark-pipelines"
PER_TRIGGER = 4  # the example reads maxFilesPerTrigger = 4 files a micro-batch, as flights_stream.toml does
DEPARTURES = [Aggregation("count", as_="departures"), Aggregation("avg", "dep_delay", as_="avg_dep_delay_min")]
# the example's other windows (its hourly one is flights_stream.toml's)
LIVE = Window.tumbling(duration="1 hour", event_time_column="dep_ts_ms", event_time_unit="ms", group_by=["carrier"],
                       lateness="30 minutes", max_groups_per_window=100, emit="on_update", aggregations=DEPARTURES)
DAILY = Window.tumbling(duration="1 day", time_zone="America/New_York", window_label_column="day",
                        event_time_column="dep_ts_ms", event_time_unit="ms", group_by=["origin"],
                        aggregations=DEPARTURES)


def why_not() -> str | None:
    """Why the example does not run here (a leg of the suite, tests/legs), or None."""
    if importlib.util.find_spec("pyspark.pipelines") is None:
        return f"Spark {pyspark.__version__} has no Declarative Pipelines (pyspark.pipelines: Spark 4.1 and later)"
    if not SPARK_PIPELINES.is_file():
        return "no spark-pipelines command beside this Python (Spark Connect's thin client): nothing starts the run"
    if os.environ.get("WID_TEST_MASTER"):  # run there by hand: it passes with a server and executors without wid
        return "the cluster leg: the example runs in the main suite, and on a cluster costs the leg minutes of CI time"
    return None


pytestmark = [pytest.mark.leg, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]


@dataclass(frozen=True)
class Run:
    """The example's run: where things are, the landed files, the two
    commands' outputs and what the dry run left in the storage."""

    root: Path
    files: list[list[dict[str, Any]]]
    dry: subprocess.CompletedProcess[str]
    left_by_dry: list[str]
    done: subprocess.CompletedProcess[str]

    @property
    def storage(self) -> Path:
        return self.root / "storage"

    def micro_batches(self) -> list[list[dict[str, Any]]]:
        return [sum(self.files[i:i + PER_TRIGGER], []) for i in range(0, len(self.files), PER_TRIGGER)]


def landed() -> list[list[dict[str, Any]]]:
    """The first 2,000 departures and 3 cancelled flights in files of 400
    rows, shuffled within each, 1 in 500 held back past the lateness
    (examples/flights_stream.py's feeder)."""
    import pandas as pd

    from examples.flights_stream import departures, files

    every = departures()
    batches, held_back = files(pd.concat([every.head(2000), every[every["dep_ts_ms"].isna()].head(3)]), 400)
    assert held_back > 0
    return batches


def project(root: Path) -> Path:
    """The example copied under `root`, its storage, landing directory and
    JSON sink there; returns its spec file."""
    shutil.copytree(ROOT / "examples" / "flights_dp", root / "project", ignore=shutil.ignore_patterns("__pycache__"))
    spec = root / "project" / "spark-pipeline.yml"
    text = spec.read_text(encoding="utf-8").replace("file:///tmp/wid-flights-pipeline/storage",
                                                    (root / "storage").as_uri())
    text = text.replace("  # flights.landing: file:///path/to/landing",
                        f"  flights.landing: {(root / 'out' / 'landing' / 'flights').as_uri()}")
    text = text.replace("  # flights.hourly_json: file:///path/to/hourly-json",
                        f"  flights.hourly_json: {(root / 'hourly-json').as_uri()}")
    assert (root / "storage").as_uri() in text and "flights.landing:" in text and "flights.hourly_json:" in text
    spec.write_text(text, encoding="utf-8")
    return spec


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    from examples.flights_stream import land

    root = tmp_path_factory.mktemp("declarative")
    files = landed()
    land(files, root / "out" / "landing" / "flights")
    spec = project(root)
    server = spark_servers.start_connect(root / "server", master=os.environ.get("WID_TEST_MASTER", "local[2]"),
                                         python=os.environ.get("PYSPARK_PYTHON", sys.executable),
                                         conf={"spark.sql.warehouse.dir": str(root / "warehouse")})
    try:
        dry = spark_servers.spark_pipelines(server.url, "dry-run", spec)
        left = sorted(str(p.relative_to(root)) for d in ("storage", "warehouse") for p in (root / d).rglob("*"))
        done = spark_servers.spark_pipelines(server.url, "run", spec)
    finally:
        spark_servers.stop(server)
    yield Run(root, files, dry, left, done)


def table(spark: Any, run: Run, name: str) -> Any:
    """A dataset of the run, read from the server's warehouse."""
    return spark.read.parquet(str(run.root / "warehouse" / name))


def test_dry_run_checks_the_graph_and_writes_nothing_then_the_run_completes(run: Run) -> None:
    assert run.dry.returncode == 0 and "Run is COMPLETED" in run.dry.stdout, run.dry.stdout[-3000:] + run.dry.stderr[-3000:]
    assert run.left_by_dry == []
    assert run.done.returncode == 0 and "Run is COMPLETED" in run.done.stdout, \
        run.done.stdout[-3000:] + run.done.stderr[-3000:]


def test_hourly_windows_and_dead_letters_equal_wid_run_and_the_oracle(spark: Any, run: Run) -> None:
    from wid.pipelines.run import run as run_pipeline

    # `wid run` of flights_stream.toml beside the example: its source (../out/landing/flights) is the same files
    shutil.copy(ROOT / "examples" / "flights_stream.toml", run.root / "project" / "flights_stream.toml")
    spec = load_pipeline(run.root / "project" / "flights_stream.toml")
    assert int(spec.source.options["maxFilesPerTrigger"]) == PER_TRIGGER
    report = run_pipeline(spec, spark)
    written = str(run.root / "out" / "flights.sqlite")
    with_wid = {(r["origin"], r["window_start"]): (r["departures"], r["avg_dep_delay_min"])
                for r in read_table(written, "departures_hourly_stream")}

    hourly = collect(table(spark, run, "departures_hourly"), spec.window)
    assert {(r["origin"], iso(r["window_start"])): (r["departures"], r["avg_dep_delay_min"]) for r in hourly} \
        == with_wid and len(with_wid) > 50
    oracle = run_stream(stamped(run.micro_batches()), spec.window)
    assert_same(hourly, [e.row for o in oracle for e in o.emitted], spec.window)
    assert sum(len(o.late) for o in run_stream(stamped(run.micro_batches()), replace(spec.window, late_data="dlq"))) \
        == sum(o.rows_late_dropped for o in oracle) > 0  # departures held back past the lateness: late, dropped

    dead = Counter((r["reason"], canonical(r["row_json"])) for r in table(spark, run, "departures_hourly_dead_letter")
                   .collect())
    assert dead == dead_letters(read_table(written, "dead_letter_stream"))
    assert dead == Counter((d.reason, json.dumps(d.row, sort_keys=True)) for o in oracle for d in o.rejected)
    assert sum(dead.values()) == 3  # the cancelled flights
    assert [(t.rows_in, t.rows_rejected, t.rows_late_dropped, t.rows_aggregated) for t in report.batches] == \
        [(o.rows_in, o.rows_rejected, o.rows_late_dropped, o.rows_aggregated) for o in oracle]


def test_the_accounting_is_the_oracle_s_in_every_micro_batch_and_the_identity_holds(spark: Any, run: Run) -> None:
    from pyspark.sql import functions as F

    window = load_pipeline(ROOT / "examples" / "flights_stream.toml").window
    oracle = run_stream(stamped(run.micro_batches()), window)
    counts = ("rows_in", "rows_rejected", "rows_late_dropped", "rows_late_dlq", "rows_aggregated")
    per_batch = table(spark, run, "departures_hourly_accounting").groupBy("batch_time") \
        .agg(*[F.sum(c).alias(c) for c in counts]).orderBy("batch_time").collect()
    assert [tuple(r[c] for c in counts) for r in per_batch] == \
        [(o.rows_in, o.rows_rejected, o.rows_late_dropped, o.rows_late_dlq, o.rows_aggregated) for o in oracle]
    totals = {r["dataset"]: r.asDict() for r in table(spark, run, "flights_accounting").collect()}
    assert totals["departures_hourly"]["rows_in"] == sum(map(len, run.files)) == totals["departures_daily"]["rows_in"]
    assert all(t["identity_holds"] for t in totals.values())
    assert totals["departures_daily"]["rows_rejected"] == 3 and totals["departures_daily"]["rows_late_dropped"] == 0


def test_the_operator_s_state_exists_once_per_streaming_window(spark: Any, run: Run) -> None:
    checkpoints = sorted({p.parent for p in run.storage.rglob("state") if p.is_dir()})
    assert [c.parent.name for c in checkpoints] == ["carriers_hourly_operator", "departures_hourly_operator"]
    for checkpoint in checkpoints:
        operators = spark.read.format("state-metadata").load(str(checkpoint)).collect()
        assert len(operators) == 1 and "transformWithState" in operators[0]["operatorName"], operators
    flows = [p for p in run.storage.rglob("offsets") if p.is_dir()]
    assert len(flows) == 9  # 2 x (operator, windows or changelog, dead letters, accounting) and the sink's


def test_the_live_window_s_latest_values_are_what_a_keyed_sink_holds(spark: Any, run: Run) -> None:
    oracle = run_stream(stamped(run.micro_batches()), LIVE)
    latest = table(spark, run, "carriers_hourly")
    assert any(not e.final for o in oracle for e in o.emitted)  # partial values, later made final
    assert_same(collect(latest, LIVE), sink_rows(LIVE, oracle, latest.columns), LIVE)
    changes = table(spark, run, "carriers_hourly_changes")
    assert changes.count() == sum(len(o.emitted) for o in oracle)


def test_the_daily_report_is_the_batch_oracle_s_and_the_sink_the_final_windows(spark: Any, run: Run) -> None:
    rows = [r for f in run.files for r in f]
    daily = table(spark, run, "departures_daily")
    assert_same(collect(daily, DAILY), evaluate(rows, DAILY).rows, DAILY)
    assert sorted(json.loads(r["row_json"])["carrier"] for r in table(spark, run, "departures_daily_dead_letter")
                  .collect()) == sorted(r["carrier"] for r in rows if r["dep_ts_ms"] is None)
    hourly = table(spark, run, "departures_hourly")
    sent = spark.read.schema(hourly.schema).json(str(run.root / "hourly-json"))
    assert sorted(map(tuple, sent.collect())) == sorted(map(tuple, hourly.collect()))
