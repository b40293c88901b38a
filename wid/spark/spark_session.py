"""Creating the Spark session wid runs on (docs/semantics.md#time: UTC)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from typing import Any

from wid.errors import MissingDependencyError

ARROW_MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"
CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"  # static: set before the JVM starts
UNCHECKED_BYTES = 2**31 - 1  # Spark skips its per-row size check at exactly this value
JAVA_FIX = "install OpenJDK 17 (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME"


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


def session_conf(master: str, conf: dict[str, Any]) -> dict[str, Any]:
    """`conf` with wid's defaults for `master` added where it sets nothing
    (see `spark_session`)."""
    conf = dict(conf)
    cores = local_cores(master)
    if cores is not None:
        conf.setdefault("spark.sql.shuffle.partitions", str(cores))
    conf.setdefault(ARROW_MAX_BYTES, str(UNCHECKED_BYTES))
    conf.setdefault(CALL_SITES, "false")
    return conf


def master_set_outside() -> str | None:
    """The master a launcher chose before wid runs, which wid respects over
    its own `master`: the running session's, or ``spark-submit``'s (the
    JVM it started; PySpark's gateway port says it is there). None when
    nothing chose one."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return str(active.conf.get("spark.master", "")) or "?"
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit, whose --master is already set
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()  # the JVM spark-submit started, whose properties SparkConf reads
        return SparkConf().get("spark.master", "?")
    return None


def spark_session(master: str | None = None, app_name: str = "wid", conf: dict[str, Any] | None = None) -> Any:
    """Get or create a SparkSession with the session time zone set to UTC,
    the UI off unless asked for, and Python workers on this interpreter.

    `master` defaults to ``local[*]`` (the embedded default), and applies
    only where nothing else chose one (`master_set_outside`: a running
    session, ``spark-submit``). On a local
    master, ``spark.sql.shuffle.partitions`` defaults to the cores: Spark's
    200 is sized for clusters and makes small local jobs slow, and a stateful
    streaming query pays for every partition in every micro-batch, whatever
    it holds (a task that opens and commits its state store, and for the WID
    operator a Python worker's handshake with the state server). The
    partition count is fixed in a query's checkpoint. (On 2 cores the
    rolling stream of ``benchmarks.stream_rolling`` in 9 micro-batches took
    13.4 s at 4 partitions against 10.6 s at 2.)
    ``spark.sql.execution.arrow.maxBytesPerBatch`` defaults to its largest
    value, which turns off Spark 4's byte check after every row sent to
    Python (about a fifth of the CPU of wid's fused NumPy passes, which
    receive rows); batches stay capped at
    ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, as in Spark 3.
    ``spark.python.sql.dataFrameDebugging.enabled`` defaults to false: with
    it PySpark records the Python call site of every column expression (four
    extra JVM calls each, measured 0.6 ms against 0.13 ms for ``F.col``),
    and wid's plans build hundreds of expressions whose call sites are
    inside wid, useless in an error message. Raises MissingDependencyError
    when Java or PySpark is missing.
    """
    check_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError as err:
        raise MissingDependencyError("PySpark", "pip install 'pyspark==4.3.0'") from err
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    outside = master_set_outside()
    master = master or "local[*]"
    conf = session_conf(master if outside is None else outside, conf or {})
    builder = SparkSession.builder.appName(app_name)
    if outside is None:
        builder = builder.master(master)
    builder = (builder.config("spark.sql.session.timeZone", "UTC")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    for key, value in conf.items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
