"""wid as a user installs it by name: the wheel built from this clone,
installed (not editable) into a fresh virtual environment outside the
clone, runs the README's ten-row example and ``wid run`` on a pipeline
file, from a directory outside the clone.

The environment gets the PySpark this one runs (pip takes it from its
cache, so the test stays short), and nothing of the clone: no
``PYTHONPATH``, and a working directory elsewhere, so that ``import wid``
can only find the installed wheel.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.docs import snippets
from tests.docs.snippets import ROOT

DEADLINE_S = 900  # building the wheel and installing it with its dependencies: a bound on a hang


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, f"{args}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the fresh environment's bin directory, the environment to run it
    in, the wheel), the wheel built from the clone and installed there."""
    import pyspark

    home = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    source = home / "source"  # what the wheel is built from, copied: building writes build/ and *.egg-info/ there
    shutil.copytree(ROOT / "wid", source / "wid", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    dist = home / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)], home, env)
    wheel = next(dist.glob("*.whl"))
    venv = home / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], home, env)
    bin_dir = venv / "bin"
    _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel), f"pyspark=={pyspark.__version__}"],
         home, env)
    env = {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "PYSPARK_PYTHON": str(bin_dir / "python")}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return bin_dir, env, wheel


def test_the_wheel_is_spark_wid_for_python_3_11_to_3_13(installed: tuple[Path, dict[str, str], Path]) -> None:
    _, _, wheel = installed
    assert wheel.name.startswith("spark_wid-")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = email.parser.Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
                                              .decode())
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert meta["Name"] == "spark-wid" and set(meta["Requires-Python"].split(",")) == {">=3.11", "<3.14"}
    assert "wid = wid.cli:main" in entry
    assert {n.split("/")[0] for n in names if not n.startswith("spark_wid-")} == {"wid"}  # no tests, no tools


def test_the_installed_wheel_runs_the_readme_example_and_a_pipeline(
        installed: tuple[Path, dict[str, str], Path], tmp_path: Path) -> None:
    bin_dir, env, _ = installed
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run([str(bin_dir / "python"), "-c", "import wid; print(wid.__file__)"], work, env).stdout.strip()
    assert Path(where).is_relative_to(bin_dir.parent) and not Path(where).is_relative_to(ROOT), where

    blocks = snippets.blocks(ROOT / "README.md")
    i = next(i for i, b in enumerate(blocks) if b.lang == "python")
    (work / "ten_rows.py").write_text(blocks[i].text, encoding="utf-8")
    printed = _run([str(bin_dir / "python"), "ten_rows.py"], work, env).stdout
    assert snippets.same_output(printed, blocks[i + 1].text), printed

    for name in ("payments.toml", "payments.csv"):
        shutil.copy(ROOT / "examples" / name, work / name)
    done = _run([str(bin_dir / "wid"), "run", "--quiet", "payments.toml"], work, env)
    assert "pipeline payments" in done.stdout and "holds" in done.stdout, done.stdout
    with sqlite3.connect(work / "payments.sqlite") as db:
        windows = db.execute("SELECT count(*), sum(payments) FROM payments").fetchone()
        dead = db.execute("SELECT reason FROM dead_letter").fetchall()
    assert windows == (6, 9) and dead == [("null event time",)]
