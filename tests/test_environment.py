"""A bad environment, met as a user meets it (``wid`` in a subprocess):
each failure is one line that names what is wrong and the fix, exit code
2, nothing written, and no hang: every run is bounded (`BOUND_S`, a bound
on a hang, never a measure of speed).

The environments are real where they can be: a port nobody listens on, a
Kafka broker (the suite's, and one that creates no topics), a Spark whose
Ivy cannot reach Maven Central (its Java is pointed at an empty home and a
proxy that refuses). Where a broken installation would break the machine's
own environment (two PySpark distributions, a PySpark without its Connect
packages), a directory placed first on ``PYTHONPATH`` holds what that
installation leaves: the distributions' metadata, a ``pyspark`` package of
another release than its jars, a ``grpc`` that does not import.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kafka_check import Kafka, start_kafka

ROOT = Path(__file__).resolve().parents[1]
BOUND_S = 240  # seconds: a bound on a hang
NOISE = ("Traceback", "WARN ", "log4j", ":: ", "Ivy", "py4j", "Py4J")


def wid(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``wid ARGS`` run in `cwd` as a user runs it, with its own temporary
    directory (where Spark's log would go), bounded by `BOUND_S`."""
    (cwd / "tmp").mkdir(exist_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(cwd / "tmp"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "wid.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=BOUND_S)


def one_error(done: subprocess.CompletedProcess[str], starts: str) -> str:
    """The error line of a run that failed as it should: exit 2, an
    ``error:`` line starting `starts`, at most a line more (where Spark's
    log is), none of Spark's or Ivy's output, no stack trace."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stdout + done.stderr
    assert lines and lines[0].startswith(f"error: {starts}"), done.stderr
    assert len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("rerun with --debug")), done.stderr
    assert not [n for n in NOISE if n in done.stdout + lines[0]], done.stdout + done.stderr
    return lines[0]


def closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def payments(tmp_path: Path) -> Path:
    """The README's pipeline file and its ten rows, in `tmp_path`."""
    for name in ("payments.toml", "payments.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    return tmp_path


def nothing_written(directory: Path) -> None:
    assert not (directory / "payments.sqlite").exists() and not list(directory.glob("*.checkpoint"))


# -- where Spark runs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("master", ["foo", "local[x]", "local[0]", "spark://host-without-port"])
def test_a_master_url_spark_cannot_parse_fails_before_spark_starts(payments: Path, master: str) -> None:
    line = one_error(wid(payments, "run", "--master", master, "payments.toml"), "--master: ")
    assert repr(master) in line and "Fix: " in line
    assert list((payments / "tmp").glob("wid-spark-*.log")) == []  # Spark never started
    nothing_written(payments)


def test_a_master_url_in_the_pipeline_is_checked_by_validate(payments: Path) -> None:
    (payments / "payments.toml").write_text((payments / "payments.toml").read_text()
                                            + '\n[spark]\nmaster = "local[x]"\n')
    line = one_error(wid(payments, "validate", "payments.toml"), "spark.master: 'local[x]' is not a Spark master URL")
    assert "local[*]" in line


def test_a_standalone_master_that_does_not_answer_fails_in_one_line(payments: Path) -> None:
    master = f"spark://127.0.0.1:{closed_port()}"
    line = one_error(wid(payments, "run", "--master", master, "payments.toml"), f"master: no Spark master answers at {master}")
    assert "refused" in line and "start-master" in line
    nothing_written(payments)


# -- Kafka ------------------------------------------------------------------------------------------------

def count_per_key(event_time: str = "") -> str:
    """The window of the pipelines below: rows per key ``k`` in 5-minute
    windows (by `event_time`, a TOML line, when given), with the bound on
    groups a stream needs."""
    return f"""[transform.window]
kind = "tumbling"
duration = "5 minutes"
{event_time}
group_by = ["k"]
max_groups_per_window = 10

[[transform.window.aggregations]]
agg = "count"
as = "n"
"""


def kafka_pipeline(servers: str, topic: str, dead_letter: str | None = None) -> str:
    """Counts per key (`count_per_key`) from Kafka `topic` into SQLite; dead letters
    to Kafka topic `dead_letter` when given."""
    dead = (f'\n[dead_letter]\nkind = "kafka"\ntopic = "{dead_letter}"\nbootstrap_servers = "{servers}"\n'
            if dead_letter else "")
    return f"""
name = "payments"

[source]
format = "kafka"
topic = "{topic}"
bootstrap_servers = "{servers}"
schema = "k STRING, v DOUBLE"

{count_per_key()}

[target]
kind = "sqlite"
path = "payments.sqlite"
table = "windows"
{dead}
[spark]
master = "local[1]"
"""


@pytest.fixture(scope="module")
def strict_kafka() -> Iterator[Kafka]:
    """A second broker, which creates no topic a client names."""
    yield from start_kafka({"auto.create.topics.enable": "false"})


def test_a_kafka_broker_that_is_not_running_fails_in_one_line(tmp_path: Path) -> None:
    servers = f"127.0.0.1:{closed_port()}"
    (tmp_path / "payments.toml").write_text(kafka_pipeline(servers, "payments"))
    line = one_error(wid(tmp_path, "run", "payments.toml"), "source.bootstrap_servers: no Kafka broker answers")
    assert servers in line and "refused" in line and "Fix: " in line
    nothing_written(tmp_path)


def test_a_missing_topic_on_a_broker_that_creates_none_fails_in_one_line(strict_kafka: Kafka, tmp_path: Path) -> None:
    source = strict_kafka.topic("payments")
    (tmp_path / "payments.toml").write_text(kafka_pipeline(strict_kafka.bootstrap, source, "no-such-dlq"))
    line = one_error(wid(tmp_path, "run", "payments.toml"), "dead_letter.topic: topic 'no-such-dlq' does not exist")
    assert "auto.create.topics.enable = false" in line and "kafka-topics.sh --create --topic no-such-dlq" in line
    (tmp_path / "payments.toml").write_text(kafka_pipeline(strict_kafka.bootstrap, "no-such-source"))
    one_error(wid(tmp_path, "run", "payments.toml"), "source.topic: topic 'no-such-source' does not exist")
    nothing_written(tmp_path)


def test_a_compacted_dead_letter_topic_is_refused_with_the_reason(kafka: Kafka, tmp_path: Path) -> None:
    source, dlq = kafka.topic("payments"), kafka.topic("dlq", compacted=True)
    (tmp_path / "payments.toml").write_text(kafka_pipeline(kafka.bootstrap, source, dlq))
    line = one_error(wid(tmp_path, "run", "payments.toml"), f"dead_letter.topic: topic '{dlq}' is compacted")
    assert "without a key" in line and "cleanup.policy = delete" in line
    nothing_written(tmp_path)


def offline_java(home: Path) -> dict[str, str]:
    """A Java whose home (Ivy's cache, Maven's local repository) is empty
    and whose every HTTP(S) connection is refused: Spark cannot fetch a
    package."""
    home.mkdir(exist_ok=True)
    proxy = " ".join(f"-D{p}.proxyHost=127.0.0.1 -D{p}.proxyPort={closed_port()}" for p in ("http", "https"))
    return {"JAVA_TOOL_OPTIONS": f"-Duser.home={home} {proxy}"}


def test_a_kafka_connector_spark_cannot_fetch_fails_in_one_line(kafka: Kafka, tmp_path: Path) -> None:
    (tmp_path / "payments.toml").write_text(kafka_pipeline(kafka.bootstrap, kafka.topic("payments")))
    done = wid(tmp_path, "run", "payments.toml", env=offline_java(tmp_path / "home"))
    line = one_error(done, "Spark could not fetch the package org.apache.spark:spark-sql-kafka-0-10_2.13:")
    assert "Connection refused" in line and "wid doctor --fetch-kafka" in line and "spark.jars" in line
    nothing_written(tmp_path)


def test_doctor_fetching_the_kafka_connector_offline_fails_in_one_line(tmp_path: Path) -> None:
    done = wid(tmp_path, "doctor", "--fetch-kafka", env=offline_java(tmp_path / "home"))
    one_error(done, "Spark could not fetch the package org.apache.spark:spark-sql-kafka-0-10_2.13:")
    assert done.stdout == ""  # no table after a failed fetch


# -- the inputs ---------------------------------------------------------------------------------------------

def test_validate_names_a_missing_input_file_without_spark(payments: Path) -> None:
    (payments / "payments.csv").unlink()
    for command in ("validate", "run"):
        line = one_error(wid(payments, command, "payments.toml"), "source.path: no such file or directory: ")
        assert str(payments / "payments.csv") in line
    assert list((payments / "tmp").glob("wid-spark-*.log")) == []  # neither started Spark
    nothing_written(payments)


def test_validate_names_a_column_the_declared_schema_lacks_without_spark(payments: Path) -> None:
    toml = payments / "payments.toml"
    toml.write_text(toml.read_text().replace('group_by = ["shop"]', 'group_by = ["store"]'))
    line = one_error(wid(payments, "validate", "payments.toml"),
                     "transform.window.group_by: column 'store' is not in the source's schema")
    assert "shop, ts, amount" in line and "Fix: " in line
    assert list((payments / "tmp").glob("wid-spark-*.log")) == []


def test_a_python_source_whose_module_is_missing_names_the_extra(payments: Path) -> None:
    toml = payments / "payments.toml"
    toml.write_text(toml.read_text().replace('format = "csv"\npath = "payments.csv"',
                                             'format = "python"\nobject = "no_such_module_for_wid:rows"'))
    line = one_error(wid(payments, "run", "payments.toml"), "Python module 'no_such_module_for_wid' (source.object)")
    assert "pip install 'spark-wid[examples]'" in line
    nothing_written(payments)

# -- the data --------------------------------------------------------------------------------------------

def test_a_stream_failing_inside_a_micro_batch_names_the_cause_and_the_fix(tmp_path: Path) -> None:
    """Parquet files whose ``ts`` is in nanoseconds (pandas' and pyarrow's
    default): Spark refuses the column inside the stream's first
    micro-batch; the cause is Spark's error on that column, with the fix."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "land").mkdir()
    ts = pa.array([1_714_554_060_000_000_000, 1_714_554_120_000_000_000], pa.timestamp("ns"))
    pq.write_table(pa.table({"k": ["a", "b"], "ts": ts, "v": [1.0, 2.0]}), tmp_path / "land" / "a.parquet")
    (tmp_path / "payments.toml").write_text(f"""
name = "payments"

[source]
format = "parquet"
path = "land"
stream = true
schema = "k STRING, ts TIMESTAMP, v DOUBLE"

{count_per_key('event_time_column = "ts"')}

[spark]
master = "local[1]"
""")
    line = one_error(wid(tmp_path, "run", "--quiet", "payments.toml"), "[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_")
    assert "[ts]" in line and "a.parquet" in line and "coerce_timestamps='us'" in line
    assert not (tmp_path / "payments.sqlite").exists()


# -- the Python packages ----------------------------------------------------------------------------------

def fake_site(root: Path, module: str | None, jars: str | None, distributions: dict[str, str]) -> dict[str, str]:
    """A directory first on ``PYTHONPATH`` with a ``pyspark`` package whose
    files say release `module` beside the jars of release `jars` (none:
    no such package), and the metadata of `distributions` (name: version),
    as pip leaves them; its ``pyspark`` fails if anything imports it."""
    site = root / "site"
    if module is not None:
        (site / "pyspark").mkdir(parents=True)
        (site / "pyspark" / "__init__.py").write_text("raise ImportError('the test pyspark was imported')\n")
        (site / "pyspark" / "version.py").write_text(f'__version__: str = "{module}"\n')
        if jars is not None:
            (site / "pyspark" / "jars").mkdir()
            (site / "pyspark" / "jars" / f"spark-core_2.13-{jars}.jar").write_bytes(b"")
    for name, version in distributions.items():
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", str(ROOT))])}


def test_pyspark_and_pyspark_client_together_are_named_with_what_to_remove(payments: Path) -> None:
    env = fake_site(payments, "4.2.0", "4.3.0", {"pyspark": "4.3.0", "pyspark-client": "4.2.0"})
    line = one_error(wid(payments, "run", "payments.toml", env=env),
                     "pyspark 4.3.0 and pyspark-client 4.2.0 are both installed")
    assert "now pyspark-client's" in line and "pip uninstall -y pyspark-client" in line
    nothing_written(payments)
    doctor = wid(payments, "doctor", env=env)
    assert doctor.returncode == 1 and "pyspark-client" in doctor.stdout and "uninstall" in doctor.stdout


def test_a_pyspark_module_of_another_release_than_its_jars_is_named(payments: Path) -> None:
    env = fake_site(payments, "4.2.0", "4.3.0", {"pyspark": "4.3.0"})
    line = one_error(wid(payments, "run", "payments.toml", env=env),
                     "the pyspark module's Python files are release 4.2.0, but Spark's jars")
    assert "pip install --force-reinstall 'pyspark==4.3.0'" in line
    nothing_written(payments)
    doctor = wid(payments, "doctor", env=env)
    assert doctor.returncode == 1 and "4.2.0" in doctor.stdout and "--force-reinstall" in doctor.stdout, doctor.stdout


def test_a_remote_session_without_the_connect_packages_names_the_extra(payments: Path) -> None:
    blocked = payments / "blocked" / "grpc"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('No module named grpc (hidden by the test)')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocked.parent), os.environ.get("PYTHONPATH", str(ROOT))])}
    done = wid(payments, "run", "--remote", f"sc://127.0.0.1:{closed_port()}", "payments.toml", env=env)
    line = one_error(done, "Spark Connect's client (grpcio >= ")
    # point 8 of issue 55: it said spark-wid[server], what a server needs; a client needs the Connect client's
    # packages, or the thin client in place of PySpark
    assert "pip install 'pyspark[connect]==" in line and "pip install 'spark-wid[connect]'" in line, line
    assert "spark-wid[server]" not in line
    nothing_written(payments)


# -- the Python API -----------------------------------------------------------------------------------------

class LocalSession:
    """What `wid.spark.environment` reads of a local classic session: its conf."""

    def __init__(self, **conf: str) -> None:
        self.conf = {"spark.master": "local[2]", **conf}


def other_python() -> str:
    """An interpreter of another environment than this one (pyenv's base
    Pythons, the system's), as ``python3`` on the PATH is for a
    ``venv/bin/python`` run without activating."""
    import glob

    found = [p for p in (*sorted(glob.glob(str(Path.home() / ".pyenv" / "versions" / "*" / "bin" / "python3"))),
                         "/usr/bin/python3") if Path(p).is_file() and Path(p).parent != Path(sys.executable).parent]
    if not found:
        pytest.skip("no Python of another environment on this machine")
    return found[-1]


def test_a_worker_python_of_another_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # point 6 of issue 55: run as venv/bin/python without activating, the ten-row example died in 146 lines of
    # PYTHON_VERSION_MISMATCH: PySpark's workers ran python3 from the PATH, another Python
    from wid.spark.environment import worker_python_problem

    monkeypatch.setenv("PYSPARK_PYTHON", other_python())
    problem = worker_python_problem(LocalSession())
    assert problem is not None and "PYTHON_VERSION_MISMATCH" in problem, problem
    assert f"PYSPARK_PYTHON={sys.executable}" in problem and "\n" not in problem
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert worker_python_problem(LocalSession()) is None
    monkeypatch.delenv("PYSPARK_PYTHON")  # python3 on the PATH: this environment's first, then another's
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert worker_python_problem(LocalSession()) is None
    assert worker_python_problem(LocalSession(**{"spark.master": "spark://h:7077"})) is None  # a cluster's own


def test_the_python_api_warns_once_in_one_line_about_pyspark_and_the_client_together(payments: Path) -> None:
    # point 6 of issue 55: with pyspark and pyspark-client installed together, the README's example ran without a
    # word (`wid run` refuses it); the API now warns, once, in one line, and the example still runs
    site = payments / "site"
    for name, version in (("pyspark_client", "4.2.0"),):  # pip's metadata of the client beside the real pyspark
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
        (site / f"{name}-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: pyspark-client\nVersion: {version}\n")
    script = payments / "ten_rows.py"
    from tests.docs import snippets

    blocks = snippets.blocks(ROOT / "README.md")
    i = next(i for i, b in enumerate(blocks) if b.lang == "python")
    script.write_text(blocks[i].text + "wid.aggregate(payments, every_5_minutes).count()\n")  # a second call
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "TMPDIR": str(payments),
           "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    done = subprocess.run([sys.executable, str(script)], cwd=payments, env=env, capture_output=True, text=True,
                          timeout=BOUND_S)
    assert done.returncode == 0, done.stderr[-3000:]
    warned = [line for line in done.stderr.splitlines() if line.startswith("wid: ")]
    assert len(warned) == 1, done.stderr[-3000:]  # once per session, though the API was called twice
    assert "pyspark-client 4.2.0 are both installed" in warned[0] and "Fix: keep one" in warned[0], warned
    assert snippets.same_output(done.stdout, blocks[i + 1].text), done.stdout
