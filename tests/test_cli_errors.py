"""`wid run` as a user runs it (a subprocess, a terminal's file
descriptors): an error is one to three lines with exit code 2 and none of
Spark's log; Ctrl-C stops a stream after the running micro-batch, a backlog
or not, prints the summary, and a rerun resumes from the checkpoint."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.crash_harness import checkpoint, compare, finish, make_stream
from tests.fixtures import land, pipeline_toml

CAPPED = """
name = "capped"

[source]
format = "csv"
path = "data.csv"
schema = "ts TIMESTAMP, k STRING"

[transform.window]
kind = "tumbling"
duration_ms = 60000
event_time_column = "ts"
group_by = ["k"]
max_groups_per_window = 1

[[transform.window.aggregations]]
agg = "count"
as = "n"

[spark]
master = "local[1]"
"""

def stream(trigger: str) -> str:
    """The shared streaming pipeline (`tests.fixtures.pipeline_toml`), tumbling, named ``ticking``."""
    return pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="ticking", cap=100) + (
        f'\n[stream]\ntrigger = "{trigger}"\n')


SPARK_NOISE = ("WARN ", "log4j", "Streaming TransformWithStateInPandas", "INFO ", "Warning:")


def wid_cli(root: Path, *args: str, env: dict[str, str] | None = None, **popen: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}
    return subprocess.Popen([sys.executable, "-m", "wid.cli", *args], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)  # type: ignore[call-overload]


def test_an_error_is_one_to_three_lines_with_exit_code_2(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("ts,k\n2024-01-01 00:00:10,a\n2024-01-01 00:00:20,b\n")
    (tmp_path / "capped.toml").write_text(CAPPED)
    out, err = wid_cli(tmp_path, "run", "capped.toml").communicate(timeout=600)
    lines = err.strip().splitlines()
    assert lines and lines[0].startswith("error: window state cap hit: max_groups_per_window=1"), err
    assert len(lines) <= 3 and "Traceback" not in out + err, err
    assert not [line for line in (out + err).splitlines() if any(n in line for n in SPARK_NOISE)], out + err


def test_ctrl_c_stops_a_stream_after_its_micro_batch_and_a_rerun_resumes(tmp_path: Path) -> None:
    rows = [{"k": "ab"[i % 2], "ts": 1_700_000_000_000 + i * 1_000, "v": 1.0} for i in range(60)]
    land(tmp_path / "land", [[json.dumps(r) for r in rows[i:i + 20]] for i in range(0, 60, 20)])
    (tmp_path / "ticking.toml").write_text(stream("500 milliseconds"))
    proc = wid_cli(tmp_path, "run", "ticking.toml")
    commits = tmp_path / "ticking.checkpoint" / "commits"
    deadline = time.monotonic() + 300
    while not (commits / "0").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, out + err
    assert "micro-batches" in out and "stopped on an interrupt after micro-batch" in out, out + err
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    done = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (tmp_path / "ticking.toml").write_text(stream("available-now"))
    out, err = wid_cli(tmp_path, "run", "ticking.toml").communicate(timeout=600)
    resumed = sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    # A stop that lands while Spark plans the next micro-batch can leave the
    # file source's log holding a file the offset log never got; the rerun
    # then reads it together with the next one in a single micro-batch. So
    # the rerun is not bound to one micro-batch per file, only to resume
    # after `done` and to read exactly the rows `done` did not commit.
    assert resumed == list(range(len(resumed))) and done == resumed[:len(done)] and len(resumed) > len(done), (
        done, resumed, out, err)
    summary = {a.strip(): b.strip() for a, b in (line.split("│")[1:3] for line in out.splitlines()
                                                 if line.count("│") >= 3)}
    assert int(summary["rows in"].replace(",", "")) == 20 * (3 - len(done)), out


def committed(root: Path) -> list[int]:
    commits = checkpoint(root) / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else []


def test_ctrl_c_with_a_backlog_stops_after_the_running_micro_batch(tmp_path: Path) -> None:
    # 12 files waiting, one a micro-batch, available-now: Spark starts each micro-batch as the last one ends
    batches = make_stream(tmp_path, files=12, rows_per_file=20, rng=random.Random(43))
    proc = wid_cli(tmp_path, "run", "pipeline.toml", bufsize=1)
    assert proc.stdout is not None
    timer = threading.Timer(600, proc.kill)  # bounds a run that would not stop
    timer.start()
    try:
        shown = []
        for line in proc.stdout:  # after the first micro-batch's line
            shown.append(line)
            if line.startswith("batch "):
                break
        before = committed(tmp_path)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        timer.cancel()
    out = "".join(shown) + out
    assert proc.returncode == 130, out + err
    after = committed(tmp_path)
    assert before and len(after) <= len(before) + 2, (before, after)  # the running one, and one that ended meanwhile
    assert "Ctrl-C: the stream stops after micro-batch" in out and "stopped on an interrupt after micro-batch" in out
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    finish(tmp_path)  # resumes from the checkpoint, to the end
    result = compare(tmp_path, batches)
    assert result["windows_equal"] and result["dead_equal"] and result["oracle_windows"] > 0, result


def test_the_metrics_stay_up_until_after_the_summary(tmp_path: Path) -> None:
    """`--metrics-port 0` serves on a free port and says which."""
    import urllib.request

    rows = [{"k": "ab"[i % 2], "ts": 1_700_000_000_000 + i * 1_000, "v": 1.0} for i in range(40)]
    land(tmp_path / "land", [[json.dumps(r) for r in rows[i:i + 20]] for i in range(0, 40, 20)])
    (tmp_path / "scraped.toml").write_text(stream("available-now").replace('name = "ticking"', 'name = "scraped"'))
    proc = wid_cli(tmp_path, "run", "--quiet", "--metrics-port", "0", "--metrics-linger", "120",
                   "scraped.toml", bufsize=1)
    assert proc.stdout is not None
    shown = []
    for line in proc.stdout:  # the summary ends with its elapsed time, then the linger notice
        shown.append(line)
        if "for a last scrape" in line:
            break
    assert any("│ elapsed" in line for line in shown), "".join(shown)
    ports = {int(p) for p in re.findall(r"http://127\.0\.0\.1:(\d+)/metrics", "".join(shown))}
    assert len(ports) == 1 and 0 not in ports, "".join(shown)  # the notice at start and the linger's say the same
    port = ports.pop()
    scraped = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    assert re.search(r"^wid_rows_in_total\S* 40\.0$", scraped, re.M), scraped



@pytest.mark.parametrize("port", ["busy", "70000", "-1"])
def test_a_bad_metrics_port_fails_in_one_line_before_spark_starts(tmp_path: Path, port: str) -> None:
    land(tmp_path / "land", [[json.dumps({"k": "a", "ts": 1_700_000_000_000, "v": 1.0})]])
    (tmp_path / "ticking.toml").write_text(stream("available-now"))
    (tmp_path / "tmp").mkdir()
    with socket.socket() as held:  # a port another program serves on
        held.bind(("127.0.0.1", 0))
        held.listen()
        given = str(held.getsockname()[1]) if port == "busy" else port
        proc = wid_cli(tmp_path, "run", "--metrics-port", given, "ticking.toml", env={"TMPDIR": str(tmp_path / "tmp")})
        out, err = proc.communicate(timeout=300)
    lines = err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, out + err
    assert lines[0].startswith(f"error: --metrics-port: port {given} "), err
    # Spark never started: its output was never moved to a log file, and no checkpoint was made
    assert list((tmp_path / "tmp").glob("wid-spark-*.log")) == [] and not (tmp_path / "ticking.checkpoint").exists()
    assert "Traceback" not in out + err


def test_a_failed_stream_names_its_root_cause_in_one_line(tmp_path: Path) -> None:
    """A Parquet file whose column type differs from the others' fails the
    stream inside its writer; the error is Spark's own, not the wrapping."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "land").mkdir()
    pq.write_table(pa.table({"k": ["a"], "ts": [1_700_000_000_000], "v": [1.0]}), tmp_path / "land" / "a.parquet")
    pq.write_table(pa.table({"k": ["a"], "ts": ["late"], "v": ["1.0"]}), tmp_path / "land" / "b.parquet")
    (tmp_path / "ticking.toml").write_text(stream("available-now").replace('format = "json"', 'format = "parquet"'))
    proc = wid_cli(tmp_path, "run", "--quiet", "ticking.toml")
    out, err = proc.communicate(timeout=600)
    lines = err.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2, out + err
    assert lines[0].startswith("error: [FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] "), err
    assert "b.parquet" in lines[0] and "Parquet column [ts]" in lines[0], err
    log = lines[1].split("Spark's log: ")[1]
    assert Path(log).is_file() and "Traceback" not in out + err
