"""Spark's own servers on 127.0.0.1, started from the PySpark package (no
Spark download, no Docker): a Spark Connect server, and a standalone
cluster of one master and N workers; and Spark Declarative Pipelines'
``spark-pipelines`` command against a Connect server (`spark_pipelines`).

    python -m tools.spark_servers connect start   # prints sc://127.0.0.1:15002 once it serves
    python -m tools.spark_servers cluster start   # prints spark://127.0.0.1:7077 once the workers registered
    python -m tools.spark_servers connect stop    # (or cluster stop)

Both run Spark's own classes with the package's ``bin/spark-submit`` and
``bin/spark-class``: ``org.apache.spark.sql.connect.service.SparkConnectServer``
(its jar ships with PySpark), ``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker``. Logs and pids live in ``--dir``.

Where Python runs: the Connect server runs Python UDFs and the
``foreachBatch`` functions of streams in its own Python (`python`, by
default this interpreter: it needs wid for a pipeline's stream writer).
A cluster's executors run the Python the application names
(``spark.pyspark.python`` or ``PYSPARK_PYTHON`` on the driver); they need
only PySpark, numpy, pandas and pyarrow, since wid ships its executor code
with each job (`wid.spark.shipping`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tools.services import ServiceError, free_port, launch, read_pids, stop_pid

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
CONNECT_READY = "Spark Connect server started at"
MASTER_READY = "I have been elected leader"
WORKER_READY = "Successfully registered with master"
# One machine, test data: UTC, no UI, few shuffle partitions.
CONNECT_CONF = {"spark.sql.session.timeZone": "UTC", "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": "2"}


def spark_home() -> Path:
    """The PySpark package's directory, which holds Spark's jars and scripts."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True)
class Server:
    """Started servers: the URL clients use, and their pid file in `directory`."""

    url: str
    directory: Path
    pids: tuple[int, ...]


def _environment(python: str) -> dict[str, str]:
    home = str(spark_home())
    return {**os.environ, "SPARK_HOME": home, "PYSPARK_PYTHON": python, "SPARK_LOCAL_IP": "127.0.0.1"}


def start_connect(directory: Path, port: int = 0, master: str = "local[2]", python: str = sys.executable,
                  conf: Mapping[str, str] | None = None, timeout_s: float = 180) -> Server:
    """A Spark Connect server on 127.0.0.1:`port` (0: a free one) running
    on `master`, its Python workers on `python`; returns once it serves."""
    port = port or free_port()
    settings = {**CONNECT_CONF, "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port), **(conf or {})}
    command = [str(spark_home() / "bin" / "spark-submit"), "--class", CONNECT_CLASS, "--name", "Spark Connect server",
               "--master", master, *[a for k, v in settings.items() for a in ("--conf", f"{k}={v}")]]
    pid = launch(command, directory / "connect.log", CONNECT_READY, what="the Spark Connect server",
                 env=_environment(python), cwd=directory, timeout_s=timeout_s)
    (directory / "connect.pid").write_text(f"{pid} {port}\n")
    return Server(f"sc://127.0.0.1:{port}", directory, (pid,))


def start_cluster(directory: Path, workers: int = 2, cores: int = 1, memory: str = "2g",
                  timeout_s: float = 120) -> Server:
    """A standalone master on 127.0.0.1 and `workers` workers of `cores`
    cores and `memory` each; returns once every worker registered."""
    port = free_port()
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = _environment(sys.executable)
    pids = [launch([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                    "--webui-port", str(free_port())], directory / "master.log", MASTER_READY,
                   what="the Spark master", env=env, cwd=directory, timeout_s=timeout_s)]
    url = f"spark://127.0.0.1:{port}"
    try:
        for i in range(workers):
            work = directory / f"worker-{i}"
            work.mkdir(parents=True, exist_ok=True)
            pids.append(launch([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                "--cores", str(cores), "--memory", memory, "--work-dir", str(work),
                                "--webui-port", str(free_port()), url], directory / f"worker-{i}.log", WORKER_READY,
                               what=f"Spark worker {i}", env=env, cwd=work, timeout_s=timeout_s))
    finally:
        (directory / "cluster.pid").write_text("".join(f"{p}\n" for p in pids))
    return Server(url, directory, tuple(pids))


def spark_pipelines(url: str, command: str, spec: Path, timeout_s: float = 900) -> subprocess.CompletedProcess[str]:
    """Spark Declarative Pipelines' ``spark-pipelines COMMAND --spec SPEC``
    (``dry-run``, ``run``) from this environment's PySpark (4.1 and later),
    against the Spark Connect server at `url`, in the spec's directory;
    returns it finished (its output captured)."""
    command_path = Path(sys.executable).parent / "spark-pipelines"
    env = {**os.environ, "PATH": f"{command_path.parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYSPARK_PYTHON": sys.executable}
    return subprocess.run([str(command_path), "--remote", url, command, "--spec", str(spec)], cwd=spec.parent,
                          env=env, capture_output=True, text=True, timeout=timeout_s)


def stop(server: Server) -> None:
    """Stop every process of `server` (workers before their master)."""
    for pid in reversed(server.pids):
        stop_pid(pid)


def _stop_in(directory: Path, pid_file: str) -> None:
    for pid in reversed(read_pids(directory / pid_file)):
        stop_pid(pid)
    (directory / pid_file).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Spark Connect or a standalone cluster on 127.0.0.1.")
    parser.add_argument("server", choices=["connect", "cluster"])
    parser.add_argument("action", choices=["start", "stop"])
    parser.add_argument("--dir", type=Path, default=Path(".spark"), help="logs and pids (default .spark)")
    parser.add_argument("--port", type=int, default=15002, help="Spark Connect's port (default 15002)")
    parser.add_argument("--workers", type=int, default=2, help="a cluster's workers (default 2)")
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    pid_file = f"{args.server}.pid"
    try:
        if args.action == "stop":
            _stop_in(directory, pid_file)
        elif read_pids(directory / pid_file):
            print(f"already running: see {directory / pid_file}", file=sys.stderr)
            return 1
        elif args.server == "connect":
            print(start_connect(directory, args.port).url)
        else:
            print(start_cluster(directory, args.workers).url)
    except ServiceError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
