"""A class-data-sharing archive of Spark's classes for the suite's JVMs.

Most of the suite's CPU goes to starting JVMs: its sessions, each `wid run`
a test starts (the CLI, crash and Ctrl-C tests start several), the legs'
servers. A JVM starting Spark loads some twelve thousand classes from
Spark's jars, parsing and verifying each. The JDK's application class-data
sharing (a dynamic archive: ``-XX:ArchiveClassesAtExit`` writes the classes
a run loaded, ``-XX:SharedArchiveFile`` maps them into later JVMs) skips
that work; benchmarks/RESULTS.md has the CPU it saves. What Spark computes
does not change: the archive holds the same classes from the same jars.

`options` makes the archive once per PySpark install and Java (a small
batch and stream of wid's, then a normal exit, which writes it, at a
run's start), and keeps it under ``~/.cache/wid/class-archives``, one per
PySpark folder (a new venv in the same place replaces it). A JVM whose
class path does not match (another PySpark's jars) ignores it, and
``-Xlog`` keeps the JVM's notice of that out of the output, which the CLI
tests read. A machine whose JDK cannot write one runs without it.

``python -m tests.class_archive PATH`` is the run that writes the archive.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

QUIET = "-Xlog:cds=off,cds+dynamic=off"  # the JVM's notice of an archive it cannot use goes to stdout otherwise
MAKE_TIMEOUT_S = 600
OFF = "WID_TEST_NO_CLASS_ARCHIVE"


def home() -> Path:
    """Where the archives are kept (the user's cache, as `tools.python_envs` keeps its environments)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "wid" / "class-archives"


def key() -> tuple[str, str] | None:
    """What an archive is valid for: (the PySpark install's jars folder,
    the Java that runs Spark and those jars as the JVM checks them), or
    None when this PySpark has no jars (Spark Connect's thin client). The
    JVM maps an archive only for the class path it was made with, in the
    same order (its ``jars/*`` is the folder's listing order) and with the
    same sizes and modification times, so a reinstalled PySpark (a new
    venv) needs a new archive."""
    import pyspark

    from wid.spark.spark_session import check_java

    jars = Path(pyspark.__file__).parent / "jars"
    stats = [(e.name, e.stat()) for e in os.scandir(jars) if e.name.endswith(".jar")] if jars.is_dir() else []
    if not stats:
        return None
    made_by = [str(Path(check_java()).resolve()), [(name, st.st_size, st.st_mtime_ns) for name, st in stats]]
    digest = lambda value: hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]  # noqa: E731
    return digest(str(jars)), digest(made_by)


def options(base: str) -> str:
    """JVM options: `base` plus the archive's, the archive made first when
    this machine has none for this PySpark and Java; `base` alone when the
    JDK could not write one, when this PySpark has no jars, or when `OFF`
    is set (an environment used once, whose archive would be made for one
    run)."""
    found = None if os.environ.get(OFF) else key()
    if found is None:
        return base
    folder, made_by = found
    archive = home() / f"spark-{folder}-{made_by}.jsa"
    if not archive.exists():
        archive.parent.mkdir(parents=True, exist_ok=True)
        with open(home() / f"spark-{folder}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time; the others find it made
            if not archive.exists():
                for stale in home().glob(f"spark-{folder}-*.jsa"):  # this folder's earlier install's
                    stale.unlink()
                make(archive, base)
    return f"{base} -XX:SharedArchiveFile={archive} {QUIET}" if archive.exists() else base


def make(archive: Path, base: str) -> None:
    """Run this module's small job in a JVM that writes `archive` at exit."""
    part = archive.with_suffix(".part")
    part.unlink(missing_ok=True)
    env = {**os.environ, "SPARK_SUBMIT_OPTS": f"{base} -XX:ArchiveClassesAtExit={part} {QUIET}",
           "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, "-m", "tests.class_archive", str(part)], env=env, capture_output=True,
                          text=True, timeout=MAKE_TIMEOUT_S, cwd=Path(__file__).resolve().parent.parent)
    if done.returncode == 0 and part.exists():
        os.replace(part, archive)
    else:
        print(f"tests: no class archive for Spark's JVMs ({done.stderr.strip()[-300:]})", file=sys.stderr)


def main(part: str) -> None:
    """A batch and a stream of the suite's pipeline (`tests.fixtures`) on
    local Spark, then the JVM's normal exit, which writes `part`."""
    import wid
    from tests.fixtures import good_rows, land, pipeline_toml
    from wid.pipelines.read import session_for
    from wid.spec.toml_io import load_pipeline

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = good_rows(40)
        land(root / "land", [[json.dumps(r) for r in rows[i:i + 20]] for i in range(0, 40, 20)])
        (root / "stream.toml").write_text(pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="stream"))
        spec = load_pipeline(root / "stream.toml")
        spark = session_for(spec)
        wid.run_pipeline(spec, spark)
        spark.read.json(str(root / "land")).groupBy("k").count().collect()
        jvm = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]
        spark.stop()
        jvm.stdin.close()  # the gateway exits on its input's end, writing the archive on the way
        jvm.wait(timeout=MAKE_TIMEOUT_S)


if __name__ == "__main__":
    main(sys.argv[1])
