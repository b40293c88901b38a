"""Writing results to a pipeline's sinks: the databases (SQLite, the
embedded default, and PostgreSQL: upserts by natural key, `wid.io.sql_sinks`),
Kafka (messages keyed by natural key, `wid.io.kafka`), Delta and Iceberg
tables (MERGE on the natural key, `wid.io.lakehouse`, `wid.io.iceberg`),
Parquet (append or overwrite) and the console. Keyed sinks also delete by natural key
(`delete`: session windows retracted by the WID operator; on Kafka a
tombstone)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame
from rich.console import Console
from rich.table import Table

from wid.io import iceberg, kafka, lakehouse
from wid.io.batch import ONE_RUN, Batch
from wid.io.paths import resolve
from wid.io.sql_sinks import (
    Dialect,
    Refused,
    delete_keys,
    for_export,
    in_transaction,
    upsert,
    write_postgres,
    write_sqlite,
)
from wid.io.sql_sinks import describe as describe_database
from wid.spec.pipeline import SQL_SINKS, SinkSpec
from wid.spec.secrets import mask_url
from wid.terminal import Terminal, shown


def describe(sink: SinkSpec, base_dir: str) -> str:
    """Where a sink writes, for messages (no password: a path is a URI that
    may hold one, shown through `mask_url`)."""
    if sink.kind in SQL_SINKS:
        return describe_database(sink, base_dir)
    path = mask_url(resolve(sink.path or "", base_dir))
    if sink.kind == "parquet":
        return f"Parquet {path} ({sink.mode})"
    if sink.kind == "kafka":
        return f"Kafka topic {sink.topic}"
    if sink.kind == "delta":
        return f"Delta table {path}"
    if sink.kind == "iceberg":
        return f"Iceberg table {sink.table} in {path}"
    return "the console"


def write_console(df: DataFrame, rows: int, title: str, console: Console | None = None) -> int:
    """Print the first `rows` rows as a table (on `console`, by default a
    `wid.terminal.Terminal` on standard output: values are printed as text,
    `wid.terminal.shown`); returns the rows shown."""
    df = for_export(df)
    table = Table(title=shown(title))
    for name in df.columns:
        table.add_column(shown(name))
    printed = df.limit(rows).collect()
    for r in printed:
        table.add_row(*["" if v is None else shown(v) for v in r])
    (console or Terminal()).print(table)
    return len(printed)


def can_refuse(sink: SinkSpec) -> bool:
    """Whether `sink` may refuse a row it cannot hold (PostgreSQL checks
    each row's values; SQLite holds any value; the other kinds take any
    row)."""
    return sink.kind == "postgres"


def delete(df: DataFrame, sink: SinkSpec, base_dir: str, key: Sequence[str], batch: Batch = ONE_RUN) -> int | None:
    """Delete the rows whose natural key `df` holds (retracted session
    windows) from a keyed sink; returns the keys sent when known. Kafka gets
    tombstones; Parquet is append-only and cannot delete (wid warns at
    start-up); the console prints them. With the streaming query's id in
    `batch`, a Delta table skips a replayed micro-batch's delete."""
    if sink.kind == "delta":
        lakehouse.delete(df, resolve(sink.path or "", base_dir), key, lakehouse.txn(batch.query_id, "delete", batch.batch_id))
        return None
    if sink.kind == "iceberg":
        iceberg.delete(df, resolve(sink.path or "", base_dir), sink.table or "", key)
        return None
    if sink.kind in SQL_SINKS:
        return in_transaction(sink, base_dir, lambda con, dialect: delete_keys(df, con, dialect, sink.table or "", key))
    if sink.kind == "kafka":
        return kafka.send(kafka.tombstones(df.select(*key), batch), sink, batch, "target-delete")
    if sink.kind == "console":
        return write_console(df.select(*key), sink.rows, "retracted")
    return None


def write(df: DataFrame, sink: SinkSpec, base_dir: str, key: Sequence[str], title: str = "",
          refused: Refused | None = None, batch: Batch = ONE_RUN, rows: int | None = None) -> int | None:
    """Write `df` to `sink`; returns the rows written when known. With
    `refused`, rows a database cannot hold are appended to it, with the
    reason, and the others are written. `batch` says which write this is
    (a Kafka sink puts it in headers, and skips what a replayed micro-batch
    already wrote). `rows`: how many `df` holds, when the caller knows (a
    Kafka sink then need not count them, `wid.io.kafka.send`). A Delta
    table is merged on `key`; with the streaming query's id in `batch`, a
    replayed micro-batch writes nothing (Delta's txnAppId/txnVersion)."""
    if sink.kind == "delta":
        lakehouse.merge(df, resolve(sink.path or "", base_dir), key, lakehouse.txn(batch.query_id, "upsert", batch.batch_id),
                        sink.spark_options())
        return None
    if sink.kind == "iceberg":  # idempotent by content: Iceberg has no txnAppId
        iceberg.merge(df, resolve(sink.path or "", base_dir), sink.table or "", key, sink.spark_options())
        return None
    if sink.kind in SQL_SINKS:
        def attempt(con: Any, dialect: Dialect) -> tuple[int, Refused]:
            mine: Refused = []  # per attempt: a retried transaction refuses its rows again
            return upsert(df, con, dialect, sink.table or "", key, mine if refused is not None else None), mine
        written, mine = in_transaction(sink, base_dir, attempt)
        if refused is not None:
            refused.extend(mine)
        return written
    if sink.kind == "kafka":
        return kafka.send(kafka.window_messages(df, key, batch), sink, batch, rows=rows)
    if sink.kind == "parquet":
        df.write.mode(sink.mode).options(**sink.spark_options()).parquet(
            resolve(sink.path or "", base_dir))
        return None
    return write_console(df, sink.rows, title)


__all__ = ["can_refuse", "delete", "describe", "write", "write_console", "write_postgres", "write_sqlite"]
