"""The database sinks: SQLite (the embedded default) and PostgreSQL, both
upserting by natural key (``INSERT ... ON CONFLICT DO UPDATE``) and deleting
by it (session windows the WID operator retracted).

Every table and column name is an identifier by
`wid.spec.names.IDENTIFIER_RULE`, checked before any SQL is built, and
quoted by the driver's own rule (psycopg's ``sql.Identifier``; SQLite's
doubled quotes); values travel as parameters. A write is one transaction:
a failed run leaves the table as it was, and a rerun overwrites the same
keys. A NULL in a natural-key column (a rolling window's key is its input
row) is equal to another NULL there, as SQL's ``IS NOT DISTINCT FROM``
says, so such a row too is overwritten, never duplicated (PostgreSQL 15 or
later). The table and its natural-key index are created when the catalog
says they are missing: a write to a table that has both runs no DDL and
takes no lock beyond its rows'. Transient errors are retried (`wid.io.retry`;
PostgreSQL's timeouts and which of its errors are transient:
`wid.io.postgres`). With PostgreSQL, a row
the database cannot hold (a key over the index's size limit, a value out of
range, a NUL in a text) is refused alone, inside a savepoint, and handed
back for the dead letter; the other rows are written.

SQLite stores an instant (``TIMESTAMP``) as ISO-8601 UTC text
(``2013-01-01T10:00:00.000000Z``), which sorts in time order, and a wall-clock
time (``TIMESTAMP_NTZ``) as the same text without the ``Z``: it names no
instant. PostgreSQL stores them as ``TIMESTAMPTZ`` and ``TIMESTAMP``. The text
is computed independently of Spark's session time zone (`wid.spec.time_text`). Rows are streamed from Spark to the driver
partition by partition and written in batches of `BATCH_ROWS`.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from wid.errors import ConfigError, MissingDependencyError, SinkError
from wid.io import postgres
from wid.io.paths import resolve
from wid.io.retry import cause, with_retries
from wid.spec.names import IDENTIFIER_RULE, is_identifier
from wid.spec.pipeline import SinkSpec
from wid.spec.secrets import mask_url, url_password
from wid.spec.sql_text import ident
from wid.spec.time_text import JSON_OPTIONS, utc_text, wall_text
from wid.versions import pip_install

BATCH_ROWS = 10_000
R = TypeVar("R")
Refused = list[tuple[dict[str, Any], str]]  # rows a database could not hold, and why


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL databases wid writes to: column types,
    the parameter placeholder, how to list a table's columns, how to quote a
    name, and which errors are transient or belong to one row's values."""

    name: str
    types: tuple[tuple[type, str], ...]
    timestamp: str  # an instant
    wall_clock: str  # a TIMESTAMP_NTZ
    placeholder: str
    columns_sql: str  # one parameter: the table name; returns column names in order
    index_sql: str  # two parameters, the table and index names: a row when the index exists (a catalog read)
    quote: Callable[[str], str]
    transient: Callable[[BaseException], bool]
    row_error: Callable[[BaseException], bool] | None  # None: no row is refused alone (SQLite holds any value)
    key_term: Callable[[str], str]  # a quoted key column as the natural-key index holds it
    nulls_equal: str  # what makes the natural-key index treat NULLs as equal, after its terms


def _sqlite_quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sqlite_transient(err: BaseException) -> bool:
    return isinstance(err, sqlite3.OperationalError) and ("locked" in str(err) or "busy" in str(err))


def _pg_quote(name: str) -> str:
    from psycopg import sql

    return sql.Identifier(name).as_string()


def _pg_row_error(err: BaseException) -> bool:
    import psycopg

    return isinstance(err, psycopg.DataError | psycopg.errors.ProgramLimitExceeded)


def _sqlite_key_term(quoted: str) -> str:
    """A key column in SQLite's natural-key index: NULL as a blob. wid
    writes no blobs (binary values travel as text), so the blob stands for
    NULL alone, and two NULLs are equal, as ``IS`` says."""
    return f"ifnull({quoted}, x'00')"


SQLITE = Dialect("sqlite", ((T.IntegralType, "INTEGER"), (T.BooleanType, "INTEGER"), (T.FractionalType, "REAL")),
                 "TEXT", "TEXT", "?", "SELECT name FROM pragma_table_info(?) ORDER BY cid",
                 "SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?", _sqlite_quote,
                 _sqlite_transient, None, _sqlite_key_term, "")
# PostgreSQL 15 or later: NULLS NOT DISTINCT
POSTGRES = Dialect("postgres", ((T.IntegralType, "BIGINT"), (T.BooleanType, "BOOLEAN"),
                                (T.FractionalType, "DOUBLE PRECISION")), "TIMESTAMPTZ", "TIMESTAMP", "%s",
                   "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                   "AND table_name = %s ORDER BY ordinal_position",
                   "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s AND indexname = %s",
                   _pg_quote, postgres.transient, _pg_row_error,
                   lambda quoted: quoted, " NULLS NOT DISTINCT")


def describe(sink: SinkSpec, base_dir: str) -> str:
    """Where a database sink writes, for messages (no password)."""
    if sink.kind == "sqlite":
        return f"SQLite {resolve(sink.path or '', base_dir)} table {sink.table}"
    where = mask_url(sink.url) if sink.url is not None else f"${sink.url_env}"
    return f"PostgreSQL {where} table {sink.table}"


def for_export(df: DataFrame) -> DataFrame:
    """`df` as text a database or a terminal holds the same whatever the
    session's time zone: instants as ISO-8601 UTC text (``...Z``),
    wall-clock times as ISO-8601 text without a zone, nested values as JSON
    (instants in it in UTC), dates, decimals and bytes as text."""
    cols = []
    for f in df.schema.fields:
        c = F.col(f.name)
        if isinstance(f.dataType, T.TimestampType):
            c = F.expr(utc_text(ident(f.name)))
        elif isinstance(f.dataType, T.TimestampNTZType):
            c = F.expr(wall_text(ident(f.name)))
        elif isinstance(f.dataType, T.ArrayType | T.MapType | T.StructType):
            c = F.to_json(c, JSON_OPTIONS)
        elif isinstance(f.dataType, T.DateType | T.DecimalType | T.BinaryType):
            c = c.cast("string")
        cols.append(c.alias(f.name))
    return df.select(*cols)


def _checked(names: Sequence[str]) -> None:
    bad = [n for n in names if not is_identifier(n)]
    if bad:
        raise ConfigError("target", f"column {bad[0]!r} is not a name wid writes to a database: use {IDENTIFIER_RULE}",
                          "rename it in a [transform] sql pre-stage, or choose another alias")


def _sql_type(f: T.StructField, original: T.DataType, dialect: Dialect) -> str:
    if isinstance(original, T.TimestampType):
        return dialect.timestamp
    if isinstance(original, T.TimestampNTZType):
        return dialect.wall_clock
    for cls, name in dialect.types:
        if isinstance(f.dataType, cls):
            return name
    return "TEXT"


def _ensure_table(con: Any, dialect: Dialect, table: str, schema: T.StructType, original: T.StructType,
                  key: Sequence[str]) -> None:
    """Create `table` and its natural-key index where the catalog says
    they are missing, and check the table's columns. Only catalog reads run
    when both exist: they take no lock on the table, while ``CREATE INDEX IF
    NOT EXISTS`` would take a SHARE lock first and wait for every open
    writing transaction on it (a session left in ``BEGIN; UPDATE ...``)."""
    q = dialect.quote
    have = [r[0] for r in con.execute(dialect.columns_sql, (table,)).fetchall()]
    if not have:
        cols = ", ".join(f"{q(f.name)} {_sql_type(f, original[f.name].dataType, dialect)}" for f in schema.fields)
        con.execute(f"CREATE TABLE IF NOT EXISTS {q(table)} ({cols})")
        have = [r[0] for r in con.execute(dialect.columns_sql, (table,)).fetchall()]
    want = [f.name for f in schema.fields]
    if have != want:
        raise ConfigError("target.table", f"table '{table}' exists with columns {have}, the pipeline writes {want}",
                          "drop the table or choose another table name")
    if not con.execute(dialect.index_sql, (table, index_name(table))).fetchall():
        con.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {q(index_name(table))} ON {q(table)} "
                    f"({_key_terms(dialect, key)}){dialect.nulls_equal}")


NAME_BYTES = 63  # PostgreSQL's longest identifier (NAMEDATALEN - 1); a longer one is cut to it


def index_name(table: str) -> str:
    """The name of `table`'s natural-key index: ``<table>_natural_key``,
    or, when that passes `NAME_BYTES` in UTF-8, ``wid_natural_key_`` and a
    digest of the table's name. PostgreSQL would cut the long name, and the
    cut one can be the table's own: ``CREATE INDEX IF NOT EXISTS`` then
    makes nothing and every upsert fails for want of its unique index."""
    name = table + "_natural_key"
    if len(name.encode()) <= NAME_BYTES:
        return name
    return "wid_natural_key_" + hashlib.sha256(table.encode()).hexdigest()[:32]


def _key_terms(dialect: Dialect, key: Sequence[str]) -> str:
    """The natural key as its index and the upsert's conflict target name it."""
    return ", ".join(dialect.key_term(dialect.quote(k)) for k in key)


def batches(df: DataFrame) -> Iterator[list[tuple[object, ...]]]:
    """`df`'s rows in lists of at most `BATCH_ROWS`, partition by partition."""
    batch: list[tuple[object, ...]] = []
    for row in df.toLocalIterator(prefetchPartitions=True):
        batch.append(tuple(row))
        if len(batch) >= BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def _insert(cur: Any, sql: str, batch: list[tuple[object, ...]], dialect: Dialect, names: list[str],
            refused: Refused | None) -> int:
    """Insert `batch`; with `refused`, a row error sends the batch through
    again one row at a time, each in a savepoint, and the rows the database
    refuses go to `refused`. Returns the rows written."""
    if refused is None or dialect.row_error is None:
        cur.executemany(sql, batch)
        return len(batch)
    cur.execute("SAVEPOINT wid_batch")
    try:
        cur.executemany(sql, batch)
    except Exception as err:
        if dialect.row_error is None or not dialect.row_error(err):
            raise
        cur.execute("ROLLBACK TO SAVEPOINT wid_batch")
        return _one_by_one(cur, sql, batch, dialect, names, refused)
    cur.execute("RELEASE SAVEPOINT wid_batch")
    return len(batch)


def _one_by_one(cur: Any, sql: str, batch: list[tuple[object, ...]], dialect: Dialect, names: list[str],
                refused: Refused) -> int:
    written = 0
    for row in batch:
        cur.execute("SAVEPOINT wid_row")
        try:
            cur.execute(sql, row)
        except Exception as err:
            if dialect.row_error is None or not dialect.row_error(err):
                raise
            cur.execute("ROLLBACK TO SAVEPOINT wid_row")
            refused.append((dict(zip(names, row, strict=True)), cause(err)))
            continue
        cur.execute("RELEASE SAVEPOINT wid_row")
        written += 1
    return written


def upsert(df: DataFrame, con: Any, dialect: Dialect, table: str, key: Sequence[str],
           refused: Refused | None = None) -> int:
    """Upsert `df` into `table` keyed by `key` over the DB-API connection
    `con`, inside the caller's transaction; returns the rows written.
    Timestamps travel as text (`for_export`: the server parses an
    instant's UTC text for a TIMESTAMPTZ column, a wall-clock time's for a
    TIMESTAMP one). Rows the database cannot hold go to `refused` when
    given (PostgreSQL), else their error propagates. Raises ConfigError when
    a column is not an identifier or the table exists with other columns."""
    exported = for_export(df)
    names = [f.name for f in exported.schema.fields]
    _checked([table, *names])
    q = dialect.quote
    updates = ", ".join(f"{q(n)} = excluded.{q(n)}" for n in names if n not in key) or \
        f"{q(names[0])} = excluded.{q(names[0])}"
    sql = (f"INSERT INTO {q(table)} ({', '.join(q(n) for n in names)}) "
           f"VALUES ({', '.join([dialect.placeholder] * len(names))}) "
           f"ON CONFLICT ({_key_terms(dialect, key)}) DO UPDATE SET {updates}")
    _ensure_table(con, dialect, table, exported.schema, df.schema, key)
    cur = con.cursor()
    return sum(_insert(cur, sql, batch, dialect, names, refused) for batch in batches(exported))


def delete_keys(df: DataFrame, con: Any, dialect: Dialect, table: str, key: Sequence[str]) -> int:
    """Delete the rows of `table` whose natural key is a row of `df`."""
    _checked([table, *key])
    if not con.execute(dialect.columns_sql, (table,)).fetchall():
        return 0
    q = dialect.quote
    where = " AND ".join(f"{q(k)} = {dialect.placeholder}" for k in key)
    cur = con.cursor()
    removed = 0
    for batch in batches(for_export(df.select(*key))):
        cur.executemany(f"DELETE FROM {q(table)} WHERE {where}", batch)
        removed += len(batch)
    return removed


def in_transaction(sink: SinkSpec, base_dir: str, work: Callable[[Any, Dialect], R]) -> R:
    """Run `work(connection, dialect)` in one transaction of `sink`'s
    database, retried on transient errors (`wid.io.retry`). For PostgreSQL,
    `wid.io.postgres` says which errors are transient and runs the
    transaction under the sink's timeouts, watched for locks. Raises SinkUnavailableError past the retry budget, SinkError for an
    error no retry fixes (one line, nothing to resume), MissingDependencyError
    without psycopg."""
    where = describe(sink, base_dir)
    if sink.kind == "sqlite":
        path = resolve(sink.path or "", base_dir)
        Path(path).parent.mkdir(parents=True, exist_ok=True)

        def in_sqlite() -> R:
            with closing(sqlite3.connect(path)) as con, con:
                return work(con, SQLITE)
        return with_retries(in_sqlite, where=where, retries=sink.retries, backoff_ms=sink.retry_backoff_ms,
                            transient=SQLITE.transient)
    try:
        import psycopg
    except ImportError as err:
        raise MissingDependencyError("the PostgreSQL driver psycopg", pip_install("postgres")) from err
    url = sink.connection_url()
    secrets = (url, url_password(url))

    def in_postgres() -> R:
        with postgres.transaction(url, sink, where) as con:
            return work(con, POSTGRES)
    try:
        return with_retries(in_postgres, where=where, retries=sink.retries, backoff_ms=sink.retry_backoff_ms,
                            transient=POSTGRES.transient, secrets=secrets)
    except (psycopg.Error, postgres.Blocked) as err:
        raise SinkError(f"sink error: {where}: {cause(err, secrets)}") from None


def write_sqlite(df: DataFrame, path: str, table: str, key: Sequence[str], refused: Refused | None = None) -> int:
    """Upsert `df` into SQLite `table` in one transaction; returns the rows written."""
    return in_transaction(SinkSpec("sqlite", path=path, table=table), ".",
                          lambda con, dialect: upsert(df, con, dialect, table, key, refused))


def write_postgres(df: DataFrame, url: str, table: str, key: Sequence[str], refused: Refused | None = None) -> int:
    """Upsert `df` into PostgreSQL `table` in one transaction; `url` is a
    libpq connection string or URI. Raises MissingDependencyError without
    psycopg."""
    return in_transaction(SinkSpec("postgres", url=url, table=table), ".",
                          lambda con, dialect: upsert(df, con, dialect, table, key, refused))


__all__ = ["BATCH_ROWS", "Dialect", "POSTGRES", "Refused", "SQLITE", "batches", "delete_keys",
           "describe", "for_export", "in_transaction", "upsert", "write_postgres", "write_sqlite"]
