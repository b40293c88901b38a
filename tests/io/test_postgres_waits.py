"""What the PostgreSQL sink does when it has to wait, against the suite's
real server: a table that has its natural-key index takes no DDL lock, so
a session holding a writing transaction on it does not stall the upsert; a
lock another session holds on the rows being written is named (the table
and the holder's pid) while the write waits, and `lock_timeout_ms` ends the
wait with one line naming both; a configuration error (``sslmode=bogus``,
no such database, role or host) fails at once, without a retry.

Each write that could hang runs on a thread joined with a deadline, so a
regression fails the test instead of hanging the suite; the blocking
session is rolled back at the end either way."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from wid.errors import SinkError, SinkUnavailableError
from wid.io.sinks import write
from wid.spec.pipeline import SinkSpec

DEADLINE_S = 120  # bounds a write that would hang; never reached when the sink behaves


def frame(spark: Any, rows: list[tuple[str, str, int]]) -> Any:
    return spark.createDataFrame(rows, "ws string, k string, n long").selectExpr("to_timestamp(ws) AS ws", "k", "n")


def sink(url: str, table: str, **settings: Any) -> SinkSpec:
    return SinkSpec("postgres", url=url, table=table, **settings)


def finished(action: Callable[[], object]) -> tuple[bool, list[object]]:
    """Run `action` on a thread for at most `DEADLINE_S`: whether it ended,
    and what it returned or raised."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(action())
        except Exception as err:  # noqa: BLE001 - handed to the test
            out.append(err)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    return not thread.is_alive(), out


@pytest.fixture
def blocker(postgres_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A second session, its transaction rolled back at the end."""
    con = psycopg.connect(postgres_url)
    try:
        yield con
    finally:
        con.rollback()
        con.close()


def test_a_table_with_its_index_takes_no_ddl_lock(spark: Any, postgres_url: str,
                                                  blocker: psycopg.Connection[Any]) -> None:
    # a table made outside wid, with the right columns and no index: the catalog says the index is missing
    with psycopg.connect(postgres_url) as con:
        con.execute("CREATE TABLE own_index (ws TIMESTAMPTZ, k TEXT, n BIGINT)")
    write(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), sink(postgres_url, "own_index"), ".", ["ws", "k"])
    with psycopg.connect(postgres_url) as con:
        indexes = con.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'own_index'").fetchall()
    assert indexes == [("own_index_natural_key",)]
    # a session's writing transaction on the table (an operator's psql): its ROW EXCLUSIVE lock blocks any
    # CREATE INDEX, not an upsert
    blocker.execute("UPDATE own_index SET n = n WHERE false")
    done, out = finished(lambda: write(frame(spark, [("2024-01-01 00:00:00", "b", 2)]),
                                       sink(postgres_url, "own_index"), ".", ["ws", "k"]))
    blocker.rollback()
    assert done and out == [1], out
    with psycopg.connect(postgres_url) as con:
        assert sorted(con.execute("SELECT k, n FROM own_index").fetchall()) == [("a", 1), ("b", 2)]


def test_a_lock_on_the_rows_is_named_then_times_out(spark: Any, postgres_url: str, blocker: psycopg.Connection[Any],
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="wid")
    key = ["ws", "k"]
    write(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), sink(postgres_url, "held"), ".", key)
    blocker.execute("UPDATE held SET n = n + 1 WHERE k = 'a'")  # holds row a until it ends
    pid = blocker.info.backend_pid
    target = sink(postgres_url, "held", lock_timeout_ms=4000, retries=0)
    done, out = finished(lambda: write(frame(spark, [("2024-01-01 00:00:00", "a", 7)]), target, ".", key))
    blocker.rollback()
    assert done, "the write waited on past its lock timeout"
    assert len(out) == 1 and isinstance(out[0], SinkUnavailableError), out
    message = str(out[0])
    assert "\n" not in message and "lock timeout" in message and "table held" in message, message
    assert "checkpoint" not in message  # a write outside a stream has none to resume from
    assert f"pid {pid}" in message, message
    waiting = [r.getMessage() for r in caplog.records if "waiting for a lock" in r.getMessage()]
    assert len(waiting) == 1 and f"pid {pid}" in waiting[0] and "table held" in waiting[0], waiting
    with psycopg.connect(postgres_url) as con:
        assert con.execute("SELECT n FROM held").fetchall() == [(1,)]  # the timed-out write left nothing


@pytest.mark.parametrize("url", [
    "{url}?sslmode=bogus",
    "{url}_no_such_database",
    "postgresql://no_such_role@{hostport}/postgres",
    "postgresql://wid@no-such-host.invalid:5432/postgres",
])
def test_a_configuration_error_fails_at_once(spark: Any, postgres_url: str, url: str,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="wid")
    hostport = postgres_url.split("@")[1].split("/")[0]
    bad = sink(url.format(url=postgres_url, hostport=hostport), "never", retries=6, retry_backoff_ms=500)
    done, out = finished(lambda: write(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), bad, ".", ["ws", "k"]))
    assert done and len(out) == 1
    err = out[0]
    assert isinstance(err, SinkError) and not isinstance(err, SinkUnavailableError), err
    assert str(err).startswith("sink error: PostgreSQL") and "\n" not in str(err), err
    assert "run again" not in str(err) and not [r for r in caplog.records if "retry" in r.getMessage()]


@pytest.mark.parametrize(("err", "retried"), [
    (psycopg.OperationalError('connection failed: connection to server at "127.0.0.1", port 1 failed: '
                              "Connection refused"), True),
    (psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"), True),
    (psycopg.OperationalError('connection failed: FATAL:  the database system is starting up'), True),
    (psycopg.OperationalError("connection failed: FATAL:  sorry, too many clients already"), True),
    (psycopg.OperationalError("failed to resolve host 'db': [Errno -3] Temporary failure in name resolution"), True),
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), True),
    (psycopg.errors.SerializationFailure("could not serialize access"), True),
    (psycopg.errors.DeadlockDetected("deadlock detected"), True),
    (psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"), True),
    (psycopg.OperationalError('connection is bad: invalid sslmode value: "bogus"'), False),
    (psycopg.OperationalError("failed to resolve host 'db': [Errno -2] Name or service not known"), False),
    (psycopg.OperationalError('connection failed: FATAL:  password authentication failed for user "wid"'), False),
    (psycopg.OperationalError('connection failed: FATAL:  database "x" does not exist'), False),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), False),
    (psycopg.errors.DiskFull("could not extend file"), False),
    (psycopg.ProgrammingError('invalid URI query parameter: "bogusopt"'), False),
])
def test_only_what_a_retry_can_fix_is_transient(err: BaseException, retried: bool) -> None:
    from wid.io import postgres

    assert postgres.transient(err) is retried


def test_the_watch_warns_once_a_lock_is_held_across_two_looks(caplog: pytest.LogCaptureFixture) -> None:
    # looks:   1      2      3      4      5      6
    # holders: -      9      9      9      9,12   9,12
    # warning:               yes                  yes (another set)
    from datetime import UTC, datetime

    from wid.io.postgres import LockWatch

    caplog.set_level(logging.WARNING, logger="wid")
    watch = LockWatch("", 1, "PostgreSQL db table t", sink("postgresql://wid@db/x", "t"))
    at = datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    idle = (9, "idle in transaction", at)
    for now, found in enumerate([[], [idle], [idle], [idle], [idle, (12, None, None)], [idle, (12, None, None)]]):
        watch._look(found, float(now))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "PostgreSQL db table t: waiting for a lock held by session pid 9 (idle in transaction, query started "
        "2024-01-01 10:00:00 UTC) (blocked for 1 s or more; lock_timeout_ms = 60000 ends the wait)",
        "PostgreSQL db table t: waiting for a lock held by session pid 9 (idle in transaction, query started "
        "2024-01-01 10:00:00 UTC), session pid 12 (its state is not visible to this role) (blocked for 1 s or more; "
        "lock_timeout_ms = 60000 ends the wait)"]
