"""Writing results: SQLite (upsert on the natural key, the embedded default),
PostgreSQL (the same upsert, ``INSERT ... ON CONFLICT DO UPDATE``, through
psycopg), Parquet (append or overwrite) and the console. Keyed sinks also
delete by natural key (`delete`: session windows retracted by the WID
operator).

SQLite stores timestamps as ISO-8601 UTC text (``2013-01-01T10:00:00.000000Z``),
which sorts in time order. Rows are streamed from Spark to the driver
partition by partition and upserted in batches inside one transaction, so a
failed run leaves the table as it was and a rerun overwrites the same keys.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from rich.console import Console
from rich.table import Table

from wid.errors import ConfigError, MissingDependencyError
from wid.io.sources import resolve
from wid.spec.pipeline import SinkSpec

BATCH_ROWS = 10_000


@dataclass(frozen=True)
class Dialect:
    """What differs between the SQL databases wid upserts into: column
    types, the parameter placeholder, and how to list a table's columns."""

    name: str
    types: tuple[tuple[type, str], ...]
    timestamp: str
    placeholder: str
    columns_sql: str  # one parameter: the table name; returns column names in order


SQLITE = Dialect("sqlite", ((T.IntegralType, "INTEGER"), (T.BooleanType, "INTEGER"), (T.FractionalType, "REAL")),
                 "TEXT", "?", "SELECT name FROM pragma_table_info(?) ORDER BY cid")
POSTGRES = Dialect("postgres", ((T.IntegralType, "BIGINT"), (T.BooleanType, "BOOLEAN"),
                                (T.FractionalType, "DOUBLE PRECISION")), "TIMESTAMPTZ", "%s",
                   "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                   "AND table_name = %s ORDER BY ordinal_position")


def describe(sink: SinkSpec, base_dir: str) -> str:
    """Where a sink writes, for messages."""
    if sink.kind == "sqlite":
        return f"SQLite {resolve(sink.path or '', base_dir)} table {sink.table}"
    if sink.kind == "postgres":
        return f"PostgreSQL {_safe_url(sink.url or '')} table {sink.table}"
    if sink.kind == "parquet":
        return f"Parquet {resolve(sink.path or '', base_dir)} ({sink.mode})"
    return "the console"


def _safe_url(url: str) -> str:
    """`url` without a password."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", re.sub(r"password=\S+", "password=***", url))


def for_export(df: DataFrame) -> DataFrame:
    """Timestamps as ISO-8601 UTC strings; nested values as JSON strings."""
    cols = []
    for f in df.schema.fields:
        c = F.col(f.name)
        if isinstance(f.dataType, T.TimestampType | T.TimestampNTZType):
            c = F.date_format(c, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS'Z'")
        elif isinstance(f.dataType, T.ArrayType | T.MapType | T.StructType):
            c = F.to_json(c)
        elif isinstance(f.dataType, T.DateType | T.DecimalType | T.BinaryType):
            c = c.cast("string")
        cols.append(c.alias(f.name))
    return df.select(*cols)


def _sql_type(f: T.StructField, original: T.DataType, dialect: Dialect) -> str:
    if isinstance(original, T.TimestampType | T.TimestampNTZType):
        return dialect.timestamp
    for cls, name in dialect.types:
        if isinstance(f.dataType, cls):
            return name
    return "TEXT"


def _ensure_table(con: Any, dialect: Dialect, table: str, schema: T.StructType, original: T.StructType,
                  key: Sequence[str]) -> None:
    cols = ", ".join(f'"{f.name}" {_sql_type(f, original[f.name].dataType, dialect)}' for f in schema.fields)
    con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({cols})')
    have = [r[0] for r in con.execute(dialect.columns_sql, (table,)).fetchall()]
    want = [f.name for f in schema.fields]
    if have != want:
        raise ConfigError("target.table", f"table '{table}' exists with columns {have}, the pipeline writes {want}",
                          "drop the table or choose another table name")
    keys = ", ".join(f'"{k}"' for k in key)
    con.execute(f'CREATE UNIQUE INDEX IF NOT EXISTS "{table}_natural_key" ON "{table}" ({keys})')


def _batches(df: DataFrame) -> Iterator[list[tuple[object, ...]]]:
    batch: list[tuple[object, ...]] = []
    for row in df.toLocalIterator(prefetchPartitions=True):
        batch.append(tuple(row))
        if len(batch) >= BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def upsert(df: DataFrame, con: Any, dialect: Dialect, table: str, key: Sequence[str]) -> int:
    """Upsert `df` into `table` keyed by `key` over the DB-API connection
    `con`, inside the caller's transaction; returns the rows written.
    Timestamps travel as ISO-8601 UTC text (the server parses them for a
    TIMESTAMPTZ column). Raises ConfigError when the table exists with other
    columns."""
    exported = for_export(df)
    names = [f.name for f in exported.schema.fields]
    quoted = ", ".join(f'"{n}"' for n in names)
    conflict = ", ".join(f'"{k}"' for k in key)
    updates = ", ".join(f'"{n}" = excluded."{n}"' for n in names if n not in key) or f'"{names[0]}" = excluded."{names[0]}"'
    sql = (f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join([dialect.placeholder] * len(names))}) '
           f"ON CONFLICT ({conflict}) DO UPDATE SET {updates}")
    _ensure_table(con, dialect, table, exported.schema, df.schema, key)
    written = 0
    cur = con.cursor()
    for batch in _batches(exported):
        cur.executemany(sql, batch)
        written += len(batch)
    return written


def write_sqlite(df: DataFrame, path: str, table: str, key: Sequence[str]) -> int:
    """Upsert `df` into SQLite `table` in one transaction; returns the rows written."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path)) as con, con:
        return upsert(df, con, SQLITE, table, key)


def write_postgres(df: DataFrame, url: str, table: str, key: Sequence[str]) -> int:
    """Upsert `df` into PostgreSQL `table` (``INSERT ... ON CONFLICT DO
    UPDATE``) in one transaction; `url` is a libpq connection string or URI.
    Raises MissingDependencyError without psycopg."""
    try:
        import psycopg
    except ImportError as err:
        raise MissingDependencyError("the PostgreSQL driver psycopg", "pip install 'wid[postgres]'") from err
    with psycopg.connect(url) as con, con.transaction():
        return upsert(df, con, POSTGRES, table, key)


def write_console(df: DataFrame, rows: int, title: str, console: Console | None = None) -> int:
    """Print the first `rows` rows as a table; returns the rows shown."""
    df = for_export(df)
    table = Table(title=title)
    for name in df.columns:
        table.add_column(name)
    shown = df.limit(rows).collect()
    for r in shown:
        table.add_row(*["" if v is None else str(v) for v in r])
    (console or Console()).print(table)
    return len(shown)


def _delete(df: DataFrame, con: Any, dialect: Dialect, table: str, key: Sequence[str]) -> int:
    """Delete the rows of `table` whose natural key is a row of `df`."""
    if not con.execute(dialect.columns_sql, (table,)).fetchall():
        return 0
    where = " AND ".join(f'"{k}" = {dialect.placeholder}' for k in key)
    cur = con.cursor()
    removed = 0
    for batch in _batches(for_export(df.select(*key))):
        cur.executemany(f'DELETE FROM "{table}" WHERE {where}', batch)
        removed += len(batch)
    return removed


def delete(df: DataFrame, sink: SinkSpec, base_dir: str, key: Sequence[str]) -> int | None:
    """Delete the rows whose natural key `df` holds (retracted session
    windows) from a keyed sink; returns the keys sent. Parquet is
    append-only and cannot delete (wid warns at start-up); the console
    prints them."""
    if sink.kind == "sqlite":
        path = resolve(sink.path or "", base_dir)
        if not Path(path).exists():
            return 0
        with closing(sqlite3.connect(path)) as con, con:
            return _delete(df, con, SQLITE, sink.table or "", key)
    if sink.kind == "postgres":
        import psycopg

        with psycopg.connect(sink.url or "") as pg, pg.transaction():
            return _delete(df, pg, POSTGRES, sink.table or "", key)
    if sink.kind == "console":
        return write_console(df.select(*key), sink.rows, "retracted")
    return None


def write(df: DataFrame, sink: SinkSpec, base_dir: str, key: Sequence[str], title: str = "") -> int | None:
    """Write `df` to `sink`; returns the rows written when known."""
    if sink.kind == "sqlite":
        return write_sqlite(df, resolve(sink.path or "", base_dir), sink.table or "", key)
    if sink.kind == "postgres":
        return write_postgres(df, sink.url or "", sink.table or "", key)
    if sink.kind == "parquet":
        df.write.mode(sink.mode).options(**{k: str(v) for k, v in sink.options.items()}).parquet(
            resolve(sink.path or "", base_dir))
        return None
    return write_console(df, sink.rows, title)
