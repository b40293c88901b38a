"""Writing results: SQLite (upsert on the natural key, the embedded default),
Parquet (append or overwrite) and the console.

SQLite stores timestamps as ISO-8601 UTC text (``2013-01-01T10:00:00.000000Z``),
which sorts in time order. Rows are streamed from Spark to the driver
partition by partition and upserted in batches inside one transaction, so a
failed run leaves the table as it was and a rerun overwrites the same keys.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from rich.console import Console
from rich.table import Table

from wid.errors import ConfigError
from wid.io.sources import resolve
from wid.spec.pipeline import SinkSpec

BATCH_ROWS = 10_000
_SQLITE_TYPES = ((T.IntegralType, "INTEGER"), (T.BooleanType, "INTEGER"), (T.FractionalType, "REAL"))


def describe(sink: SinkSpec, base_dir: str) -> str:
    """Where a sink writes, for messages."""
    if sink.kind == "sqlite":
        return f"SQLite {resolve(sink.path or '', base_dir)} table {sink.table}"
    if sink.kind == "parquet":
        return f"Parquet {resolve(sink.path or '', base_dir)} ({sink.mode})"
    return "the console"


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


def _sqlite_type(t: T.DataType) -> str:
    for cls, name in _SQLITE_TYPES:
        if isinstance(t, cls):
            return name
    return "TEXT"


def _ensure_table(con: sqlite3.Connection, table: str, schema: T.StructType, key: Sequence[str]) -> None:
    cols = ", ".join(f'"{f.name}" {_sqlite_type(f.dataType)}' for f in schema.fields)
    con.execute(f'CREATE TABLE IF NOT EXISTS "{table}" ({cols})')
    have = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
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


def write_sqlite(df: DataFrame, path: str, table: str, key: Sequence[str]) -> int:
    """Upsert `df` into `table` keyed by `key`; returns the rows written.
    Raises ConfigError when the table exists with other columns."""
    df = for_export(df)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    names = [f.name for f in df.schema.fields]
    quoted = ", ".join(f'"{n}"' for n in names)
    conflict = ", ".join(f'"{k}"' for k in key)
    updates = ", ".join(f'"{n}" = excluded."{n}"' for n in names if n not in key) or f'"{names[0]}" = excluded."{names[0]}"'
    sql = (f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join("?" * len(names))}) '
           f"ON CONFLICT ({conflict}) DO UPDATE SET {updates}")
    written = 0
    with closing(sqlite3.connect(path)) as con, con:
        _ensure_table(con, table, df.schema, key)
        for batch in _batches(df):
            con.executemany(sql, batch)
            written += len(batch)
    return written


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


def write(df: DataFrame, sink: SinkSpec, base_dir: str, key: Sequence[str], title: str = "") -> int | None:
    """Write `df` to `sink`; returns the rows written when known."""
    if sink.kind == "sqlite":
        return write_sqlite(df, resolve(sink.path or "", base_dir), sink.table or "", key)
    if sink.kind == "parquet":
        df.write.mode(sink.mode).options(**{k: str(v) for k, v in sink.options.items()}).parquet(
            resolve(sink.path or "", base_dir))
        return None
    return write_console(df, sink.rows, title)
