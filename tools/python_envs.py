"""Virtual environments beside the development one, for the legs of the
test suite that need another Python environment: a cluster's executors
without wid, the oldest supported PySpark, the thin Spark Connect client.

Each lives in ``~/.cache/wid/venvs/<name>`` (``WID_VENVS`` overrides the
folder) and is built once per list of requirements: pip installs the
list into a fresh venv of this interpreter's Python, and a file records
the list, so a later call with the same list returns at once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.services import ServiceError

REPO = Path(__file__).resolve().parent.parent


def root() -> Path:
    """Where the environments live."""
    return Path(os.environ.get("WID_VENVS") or Path.home() / ".cache" / "wid" / "venvs")


def ensure(name: str, requirements: Sequence[str], timeout_s: float = 1800) -> Path:
    """The Python interpreter of environment `name` holding `requirements`
    (pip's arguments: ``pyspark==4.0.1``, ``-e /path[extra]``), built when
    missing or when it was built from another list. Raises ServiceError
    with pip's output when pip fails."""
    home = root() / name
    python = home / "bin" / "python"
    stamp = home / "wid-requirements.txt"
    wanted = "\n".join(requirements) + "\n"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    shutil.rmtree(home, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, capture_output=True)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], capture_output=True, text=True,
                          timeout=timeout_s, cwd=REPO)
    if done.returncode != 0:
        raise ServiceError(f"pip could not build the {name} environment:\n{(done.stdout + done.stderr)[-3000:]}")
    stamp.write_text(wanted)
    return python


__all__ = ["REPO", "ensure", "root"]
