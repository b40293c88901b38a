"""Running local servers for development and tests: a free port, a process
started with its output in a log file and waited for until the log says it
is ready, a pid file, and a stop by pid (SIGTERM, then SIGKILL). The Kafka
broker (`tools/kafka_broker.py`) and Spark's own servers
(`tools/spark_servers.py`) are started this way."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path


class ServiceError(RuntimeError):
    """A server could not be fetched or started; the message says why and how to fix it."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def launch(command: Sequence[str], log: Path, ready: str, *, what: str, env: Mapping[str, str] | None = None,
           cwd: Path | None = None, timeout_s: float = 120) -> int:
    """Start `command` in its own session with its output in `log`, and
    return its pid once `ready` appears in the log. Raises ServiceError
    with the log's end when the process exits first or is not ready within
    `timeout_s` (it is then stopped)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                   env=None if env is None else dict(env), cwd=cwd)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready in log.read_text(errors="replace"):
            return process.pid
        if process.poll() is not None:
            raise ServiceError(f"{what} exited ({process.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.2)
    stop_pid(process.pid)
    raise ServiceError(f"{what} was not ready within {timeout_s:g} s:\n{log.read_text(errors='replace')[-3000:]}")


def alive(pid: int) -> bool:
    """Whether process `pid` exists (a zombie child of this process is reaped first)."""
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_pid(pid: int, timeout_s: float = 30) -> None:
    """End process `pid` and its session: SIGTERM (a clean shutdown), SIGKILL after `timeout_s`."""
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive(pid):
            return


def read_pids(path: Path) -> list[int]:
    """The pids a pid file lists (one per line, first field), those alive."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    pids = [int(line.split()[0]) for line in lines if line.strip()]
    return [p for p in pids if alive(p)]


__all__ = ["ServiceError", "alive", "free_port", "launch", "read_pids", "stop_pid"]
