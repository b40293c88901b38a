"""PostgreSQL connections of the database sinks (`wid.io.sql_sinks`):
which errors a retry can fix, the timeouts every write runs under, and the
watch that says what a waiting write waits for.

- **Transient** (retried by `wid.io.retry`): a connection refused, lost or
  reset; the server shutting down, starting up or in recovery; too many
  connections; a serialization failure; a deadlock; a lock timeout (a lock
  is released when its holder's transaction ends, and each attempt names
  the holder). A host name the resolver is temporarily unable to look up
  (``EAI_AGAIN``) is transient too.
- **Not transient** (the write fails at once, one line): everything else,
  among it a refused login, no such database or role, an invalid connection
  option or value (``sslmode=bogus``), a certificate refused, a statement
  timeout (the same statement would run as long again), and a host name the
  resolver says does not exist (``EAI_NONAME``): a misspelt name does not
  become right within a retry budget, while a DNS server that does not
  answer says so with ``EAI_AGAIN``.

Each write's transaction sets ``lock_timeout`` and ``statement_timeout``
from the sink (`SinkSpec.lock_timeout_ms`, `SinkSpec.statement_timeout_ms`;
0 means none, as in PostgreSQL). While it runs, `LockWatch` asks the server
on a second connection, from a thread of its own, which sessions block it
(``pg_blocking_pids``) and logs one warning naming the table and each
holder's pid, state and query start; a lock timeout's message names them
too (`Blocked`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from wid.spec.pipeline import SinkSpec

LOG = logging.getLogger("wid")
WAIT_NOTICE_S = 5.0  # a write blocked about this long (or half its lock timeout, if shorter) is named in a warning
WATCH_TIMEOUT_S = 5  # the watch's own connection and query give up after this

# SQLSTATEs a retry can fix (https://www.postgresql.org/docs/current/errcodes-appendix.html), and class 08
TRANSIENT_STATES = frozenset({
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available: lock_timeout ran out; the holder's transaction will end
    "53300",  # too_many_connections
    "57P01", "57P02", "57P03",  # admin_shutdown, crash_shutdown, cannot_connect_now (starting up, shutting down)
})
# libpq's and psycopg's words for a connection that failed or broke, which come without a SQLSTATE
TRANSIENT_WORDS = (
    "connection refused", "server closed the connection", "connection reset", "could not receive data",
    "could not send data", "timeout expired", "connection timed out", "no route to host", "network is unreachable",
    "the database system is starting up", "the database system is shutting down", "in recovery mode",
    "not yet accepting connections", "too many clients", "terminating connection", "eof detected",
    "the connection is lost", "consuming input failed", "temporary failure in name resolution",
)
BLOCKERS_SQL = ("SELECT b.pid, a.state, a.query_start FROM unnest(pg_blocking_pids(%s)) AS b(pid) "
                "LEFT JOIN pg_stat_activity a ON a.pid = b.pid ORDER BY b.pid")


class Blocked(Exception):
    """A statement of a sink's write that ran out of `lock_timeout` (transient:
    retried) or `statement_timeout` (not retried). Its message is one line
    naming the timeout's setting and the sessions that held the lock, as far
    as the watch saw them; the sink's name and table go before it."""

    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def transient(err: BaseException) -> bool:
    """Whether a retry may fix `err` (see the module docstring): by its
    SQLSTATE when the server sent one, else by libpq's words."""
    import psycopg

    if isinstance(err, Blocked):
        return err.transient
    if not isinstance(err, psycopg.Error):
        return False
    state = err.sqlstate
    if state is not None:
        return state in TRANSIENT_STATES or state.startswith("08")
    text = str(err).lower()
    return isinstance(err, psycopg.OperationalError) and any(words in text for words in TRANSIENT_WORDS)


def holder(pid: int, state: str | None, query_start: datetime | None) -> str:
    """One session that holds a lock, as a message names it."""
    if pid == 0:
        return "a prepared transaction"
    if state is None:
        return f"session pid {pid} (its state is not visible to this role)"
    started = f", query started {query_start.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" if query_start else ""
    return f"session pid {pid} ({state}{started})"


class LockWatch:
    """Names what the backend `pid` of a write to `sink` waits for. Every
    `every_s` seconds (half of `WAIT_NOTICE_S`, or a quarter of the sink's
    lock or statement timeout if shorter) a thread asks the server, on a
    connection of its own opened at the first look, which sessions block
    `pid`. The second look in a row that finds the same ones logs one
    warning naming each (`where`, at its start, names the sink and its
    table, without a secret); `holders` keeps the last ones found for a
    timeout's message. The watch never fails the write: an error of its own
    (the server gone, say) ends it quietly."""

    def __init__(self, url: str, pid: int, where: str, sink: SinkSpec) -> None:
        self.url, self.pid, self.where, self.sink = url, pid, where, sink
        timeouts = [ms / 1000 for ms in (sink.lock_timeout_ms, sink.statement_timeout_ms) if ms]
        self.every_s = min([WAIT_NOTICE_S, *(t / 2 for t in timeouts)]) / 2
        self.holders: str | None = None  # the last sessions found blocking
        self._current: tuple[int, ...] = ()  # the pids of those the last look found
        self._since = 0.0  # when a look first found `_current` (monotonic s)
        self._warned = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wid-lock-watch", daemon=True)

    def __enter__(self) -> LockWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        import psycopg

        if self._done.wait(self.every_s):
            return
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=WATCH_TIMEOUT_S) as con:
                con.execute(f"SET statement_timeout = {WATCH_TIMEOUT_S * 1000}")
                while not self._done.is_set():
                    self._look(con.execute(BLOCKERS_SQL, (self.pid,)).fetchall(), time.monotonic())
                    self._done.wait(self.every_s)
        except psycopg.Error as err:
            LOG.debug("the lock watch of %s stopped: %s", self.where, type(err).__name__)

    def _look(self, found: list[tuple[int, str | None, datetime | None]], now: float) -> None:
        pids = tuple(row[0] for row in found)
        holders = ", ".join(holder(*row) for row in found)
        self.holders = holders or self.holders
        if pids != self._current:
            self._current, self._since, self._warned = pids, now, False
            return
        if not pids or self._warned or self._done.is_set():
            return
        ends = next((f"{name} = {ms} ends the wait" for name, ms in (
            ("lock_timeout_ms", self.sink.lock_timeout_ms), ("statement_timeout_ms", self.sink.statement_timeout_ms))
            if ms), "no timeout ends the wait: lock_timeout_ms = 0")
        LOG.warning("%s: waiting for a lock held by %s (blocked for %.0f s or more; %s)", self.where, holders,
                    now - self._since, ends)
        self._warned = True

    def blocked(self, err: BaseException) -> BaseException:
        """`err` as `Blocked` when it is a lock or statement timeout, naming
        the holders (`where`, before it in every message, names the table);
        else `err` itself."""
        import psycopg

        if isinstance(err, psycopg.errors.LockNotAvailable):
            return Blocked(f"lock timeout: waited lock_timeout_ms = {self.sink.lock_timeout_ms} for a lock held by "
                           f"{self.holders or 'another session'}", transient=True)
        if isinstance(err, psycopg.errors.QueryCanceled) and "statement timeout" in str(err):
            held = f", waiting for a lock held by {self.holders}" if self.holders else ""
            return Blocked(f"statement timeout: a statement ran past statement_timeout_ms = "
                           f"{self.sink.statement_timeout_ms}{held}", transient=False)
        return err


@contextmanager
def transaction(url: str, sink: SinkSpec, where: str) -> Iterator[Any]:
    """A connection to `sink`'s database inside one transaction under the
    sink's lock and statement timeouts, watched by `LockWatch`; a timeout
    leaves it as `Blocked`. `where` names the sink (no secret). The
    transaction's ``TimeZone`` is UTC, so that the text wid sends
    (`wid.io.sql_sinks.for_export`) means the same whatever the server's or
    the role's zone: an instant carries its ``Z``; a wall-clock time read
    into a ``TIMESTAMPTZ`` column of a table made before wall-clock times
    had their own type is taken as UTC, as it was written then."""
    import psycopg

    with psycopg.connect(url) as con, LockWatch(url, con.info.backend_pid, where, sink) as watch:
        try:
            with con.transaction():
                con.execute("SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true), "
                            "set_config('TimeZone', 'UTC', true)",
                            (str(sink.lock_timeout_ms), str(sink.statement_timeout_ms)))
                yield con
        except psycopg.Error as err:
            found = watch.blocked(err)
            if found is err:
                raise
            raise found from err


__all__ = ["Blocked", "LockWatch", "WAIT_NOTICE_S", "holder", "transaction", "transient"]
