"""Creating or joining the Spark session wid runs on (docs/semantics.md#time:
UTC), classic or Spark Connect.

Who chooses where Spark runs, first match wins:

1. a session already running in this process (a notebook's, a test's, a
   job that called wid as a library);
2. the launcher: ``spark-submit`` (its ``--master`` and ``--conf``), or
   ``SPARK_REMOTE`` (a Spark Connect server, as PySpark reads it);
3. wid's own ``remote`` (``wid run --remote sc://...``, ``[spark] remote``)
   or ``master`` (``--master``, ``[spark] master``);
4. ``local[*]``, the embedded default.

Nothing here reaches for the driver's JVM: a session is configured
through ``SparkSession.builder`` and ``spark.conf`` only, so the same code
serves a Spark Connect client, which has neither.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import sys
from typing import Any

from wid.errors import ConfigError, MissingDependencyError
from wid.spec.spark_table import standalone_masters
from wid.versions import installed_spark, pip_install

ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"  # static: set before the JVM starts
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
PROBE_S = 5.0  # how long a probe waits for a standalone master's port before Spark starts
UNCHECKED_BYTES = 2**31 - 1  # Spark skips its per-row size check at exactly this value
LOG = logging.getLogger("wid")
JAVA_FIX = "install OpenJDK 17 (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME"
PYSPARK_FIX = (f"{pip_install('spark')} (PySpark, for local mode and clusters) or {pip_install('connect')} "
               "(the thin pyspark-client, for a Spark Connect server)")
# Settings of the JVM a classic session starts, which only its creator can make: Spark's UI, its
# console progress bar and its log level (``spark.log.level``, as ``setLogLevel`` at start-up).
CLASSIC_DEFAULTS = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                    "spark.log.level": "ERROR", CALL_SITES: "false"}
# Settings of the session, which any client may change: UTC (docs/semantics.md#time) and the
# Arrow byte check (see `spark_session`).
SESSION_DEFAULTS = {"spark.sql.session.timeZone": "UTC", ARROW_MAX_BYTES: str(UNCHECKED_BYTES)}


def check_java() -> str:
    """The path of the `java` Spark will start, or MissingDependencyError."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        raise MissingDependencyError("Java (needed by Spark)", JAVA_FIX)
    return java


def local_cores(master: str) -> int | None:
    """The cores of a ``local``, ``local[N]`` or ``local[*]`` master, else None."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master)
    if not match:
        return None
    n = match.group(1)
    if n is None:
        return 1
    return (os.cpu_count() or 1) if n == "*" else int(n)


# Attempts a task gets on a local master wid starts. A local master ignores ``spark.task.maxFailures``
# (4 on a cluster): only ``local[N,F]`` retries. One retry: every attempt runs on the same machine, so
# a cause that outlasts one (load) is as likely to fail a third, while a deterministic error (a file of
# another schema) would wait for every attempt, and a transient failure of the last one would be the
# error reported in its place.
LOCAL_TASK_ATTEMPTS = 2


def with_task_retries(master: str) -> str:
    """`master` with `LOCAL_TASK_ATTEMPTS` attempts per task when it is a
    ``local``, ``local[N]`` or ``local[*]`` master that names none
    (``local[2]`` becomes ``local[2,2]``); any other master as it is. A
    local master otherwise fails a job, and so a stream, at a task's first
    failure, such as a Python worker that did not connect back on a loaded
    machine, which a cluster would have retried."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)\])?", master)
    if not match:
        return master
    return f"local[{match.group(1) or 1},{LOCAL_TASK_ATTEMPTS}]"


def session_conf(master: str, conf: dict[str, Any]) -> dict[str, Any]:
    """`conf` with wid's session defaults for `master` added where it sets
    nothing (see `spark_session`)."""
    conf = {**SESSION_DEFAULTS, **conf}
    cores = local_cores(master)
    if cores is not None:
        conf.setdefault(SHUFFLE_PARTITIONS, str(cores))
    return conf


def is_connect(session: Any) -> bool:
    """Whether `session` is a Spark Connect client session."""
    return type(session).__module__.startswith("pyspark.sql.connect")


def chosen_outside(remote: str | None = None) -> str | None:
    """What chose where Spark runs before wid's own settings apply (see the
    module docstring): ``"session"``, ``"spark-submit"``,
    ``"SPARK_REMOTE"``, or None when nothing did."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is not None:
        return "session"
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit, whose --master is already set
        return "spark-submit"
    if os.environ.get("SPARK_REMOTE"):
        return "SPARK_REMOTE"
    return None


def spark_session(master: str | None = None, app_name: str = "wid", conf: dict[str, Any] | None = None,
                  remote: str | None = None) -> Any:
    """Get or create a SparkSession (classic, or Spark Connect when
    `remote` or ``SPARK_REMOTE`` names a server) with the session time zone
    set to UTC and, for a classic session wid starts, the UI off, Spark's
    log at ERROR and Python workers on this interpreter.

    `master` defaults to ``local[*]`` (the embedded default); a local
    master retries a failed task as a cluster does (`with_task_retries`);
    `master` and
    `remote` apply only where nothing else chose (`chosen_outside`). `conf`
    holds Spark settings: all of them configure a classic session wid
    starts; a running session or a Connect server takes only those a client
    may change (the rest are the server's or the launcher's, and are
    ignored). On a local master, ``spark.sql.shuffle.partitions`` defaults
    to the cores: Spark's 200 is sized for clusters and makes small local
    jobs slow, and a stateful streaming query pays for every partition in
    every micro-batch, whatever it holds (a task that opens and commits its
    state store, and for the WID operator a Python worker's handshake with
    the state server); the partition count is fixed in a query's
    checkpoint. ``spark.sql.execution.arrow.maxBytesPerBatch`` defaults to
    its largest value, which turns off Spark 4's byte check after every row
    sent to Python (a large share of the CPU of wid's fused NumPy passes,
    which receive rows); batches stay capped at
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows.
    ``spark.python.sql.dataFrameDebugging.enabled`` defaults to false: with
    it PySpark records the Python call site of every column expression
    (extra JVM calls each), and wid's plans build hundreds of expressions
    whose call sites are inside wid, useless in an error message.

    Raises MissingDependencyError when PySpark (or, for a classic session,
    Java; for Spark Connect, its client's packages) is missing."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:
        raise MissingDependencyError("PySpark", PYSPARK_FIX) from err
    conf = dict(conf or {})
    outside = chosen_outside(remote)
    active = SparkSession.getActiveSession()
    if active is not None:
        session = active
    elif remote and outside is None:
        session = _connect(SparkSession.builder.remote(remote).appName(app_name))
    elif outside == "SPARK_REMOTE":
        session = _connect(SparkSession.builder.appName(app_name))  # PySpark reads SPARK_REMOTE itself
    else:
        session = _classic(None if outside else (master or "local[*]"), app_name, conf)
    _set_session_conf(session, conf, created=active is None)
    return session


def _connect(builder: Any) -> Any:
    """A Spark Connect session from `builder`; MissingDependencyError naming
    what brings the client's packages (grpcio...) when they are missing:
    PySpark's ``connect`` extra for a full PySpark, or the thin client
    (``spark-wid[connect]``), never both. PySpark checks for them only as the
    session starts."""
    try:
        return builder.getOrCreate()
    except ImportError as err:
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        what = re.sub(r"^\[[A-Z_.]+\]\s*", "", text)  # PySpark's error class
        found = installed_spark()
        fix = (f"pip install 'pyspark[connect]=={found[1]}' (the Connect client's packages for this PySpark), or "
               f"the thin client instead of PySpark: pip uninstall -y pyspark && {pip_install('connect')}"
               if found is not None and found[0] == "pyspark" else
               f"{pip_install('connect')} (Spark Connect's thin client, pyspark-client, with its packages)")
        raise MissingDependencyError(f"Spark Connect's client ({what})", fix) from None


def check_master_answers(master: str, timeout_s: float = PROBE_S) -> None:
    """Raise ConfigError naming ``master`` when `master` is a standalone
    master (``spark://``) and none of its hosts accepts a connection within
    `timeout_s` seconds each: Spark itself would retry for a minute or more
    and then fail with a constructor's error that names neither."""
    masters = standalone_masters(master)
    failures = []
    for host, port in masters:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return
        except OSError as err:
            failures.append(err.strerror or type(err).__name__)
    if masters:
        raise ConfigError("master", f"no Spark master answers at {master} ({'; '.join(failures)})",
                          "start the master (Spark's sbin/start-master.sh) or give the URL it logs, "
                          "spark://host:7077")


def _classic(master: str | None, app_name: str, conf: dict[str, Any]) -> Any:
    """Start (or join spark-submit's) classic session, with every setting of
    `conf` and wid's defaults; `master` None leaves it to the launcher.
    Raises ConfigError for a standalone master that does not answer
    (`check_master_answers`)."""
    from pyspark.sql import SparkSession

    check_java()
    if master is not None:
        check_master_answers(master)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(with_task_retries(master))
    for key, value in {**CLASSIC_DEFAULTS, **SESSION_DEFAULTS, **conf}.items():
        builder = builder.config(key, str(value))
    return builder.getOrCreate()


def _set_session_conf(session: Any, conf: dict[str, Any], created: bool) -> None:
    """Set wid's session defaults (with the local-master shuffle partitions
    when wid created the session) and the settings of `conf` a client may
    change on `session`; a running session keeps its own shuffle
    partitions unless `conf` sets them."""
    master = str(session.conf.get("spark.master", "") or "") if created and not is_connect(session) else ""
    wanted = session_conf(master, conf) if created else {**SESSION_DEFAULTS, **conf}
    kept = []
    for key, value in wanted.items():
        if str(session.conf.get(key, None)) == str(value):
            continue
        if session.conf.isModifiable(key):
            session.conf.set(key, str(value))
        elif key in conf:
            kept.append(key)
    if kept:
        LOG.info("these settings are the running session's or the server's, and stay as they are: %s",
                 ", ".join(sorted(kept)))


__all__ = ["LOCAL_TASK_ATTEMPTS", "check_master_answers", "chosen_outside", "is_connect", "local_cores", "session_conf",
           "spark_session", "with_task_retries"]
