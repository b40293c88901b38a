"""The environment checks of the Python API: what ``wid run`` checks before
Spark starts, said once per session to a user who brought a session of
their own.

``wid run`` refuses a broken PySpark before starting Spark
(`wid.versions.check_install`). A Python user has started Spark already
when wid first sees a DataFrame, and may be running fine despite what is
found, so `warn_once` warns instead, one line each, the first time a
session reaches the API (`wid.spark.api`):

- **a broken PySpark install** (`wid.versions.install_problem`): ``pyspark``
  and ``pyspark-client`` installed together (both install the ``pyspark``
  module: ``spark-wid[spark,connect]`` does this), or a ``pyspark`` module
  of another release than Spark's jars beside it;
- **a worker Python that is not this one**: on a local classic session
  PySpark starts its Python workers with ``PYSPARK_PYTHON`` (or
  ``spark.pyspark.python``), else ``python3`` from the PATH. Run as
  ``venv/bin/python`` without activating the environment, that is another
  Python: another release fails every Python step with Spark's
  ``PYTHON_VERSION_MISMATCH``, the same release lacks the environment's
  packages (pyarrow). Set ``PYSPARK_PYTHON`` to this interpreter before the
  session starts (``wid run`` does).

A Spark Connect session's workers are the server's, and a cluster's are
its executors': neither is this machine's Python to judge.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from typing import Any

from wid.versions import install_problem

LOG = logging.getLogger("wid")
PROBE_S = 10  # seconds the worker Python may take to say where it runs
_CHECKED: set[int] = set()  # the sessions warned about (their ids): once per session


def worker_python_problem(session: Any) -> str | None:
    """Why the Python workers of `session` (a local classic one) would not
    run this interpreter, with the fix; None when they would, or when they
    are not this machine's to judge (Spark Connect, a cluster)."""
    from wid.spark.spark_session import is_connect

    if is_connect(session) or not str(session.conf.get("spark.master", "") or "").startswith("local"):
        return None
    chosen = session.conf.get("spark.pyspark.python", None) or os.environ.get("PYSPARK_PYTHON")
    found = chosen or shutil.which("python3")
    if found is None:
        return f"no python3 on the PATH for Spark's Python workers. Fix: PYSPARK_PYTHON={sys.executable}"
    worker = shutil.which(found) or found
    if _prefix(worker) == sys.prefix:
        return None
    how = "PYSPARK_PYTHON" if chosen else "python3 on the PATH"
    return (f"Spark's Python workers run {worker} ({how}), not this Python ({sys.executable}): another release "
            "fails with PYTHON_VERSION_MISMATCH, another environment lacks its packages. Fix: set "
            f"PYSPARK_PYTHON={sys.executable} before the session starts, or activate the environment")


def _prefix(python: str) -> str | None:
    """The environment (``sys.prefix``) `python` runs in, asked of it (a
    pyenv shim or a symlink says nothing by its path); None when it does
    not run."""
    try:
        done = subprocess.run([python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                              timeout=PROBE_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def problems(session: Any) -> list[str]:
    """What `warn_once` would say about `session`, one line each."""
    found = []
    install = install_problem()
    if install is not None:
        found.append(f"{install[0]}. Fix: {install[1]}")
    worker = worker_python_problem(session)
    if worker is not None:
        found.append(worker)
    return found


def warn_once(session: Any) -> None:
    """Warn (the ``wid`` logger, one line each) about `problems` of
    `session`, the first time it is seen; nothing after that."""
    if id(session) in _CHECKED:
        return
    _CHECKED.add(id(session))
    for problem in problems(session):
        LOG.warning("wid: %s", problem)


__all__ = ["problems", "warn_once", "worker_python_problem"]
