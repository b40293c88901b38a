"""The Delta sink on a real Delta table (delta-spark's jar in the test
session): MERGE on the natural key, NULL-safe; deletes by key; a table of
another shape refused; and Delta's txnAppId/txnVersion honoured by MERGE,
also across a real streaming query's replay of a micro-batch its previous
run wrote before failing. Run with ``-m delta`` on a PySpark Delta supports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("delta", reason="Delta Lake tests need the delta-spark package (the Delta CI leg)")

from wid.errors import ConfigError  # noqa: E402
from wid.io import lakehouse  # noqa: E402
from wid.io.lakehouse import Txn  # noqa: E402

pytestmark = pytest.mark.delta
SCHEMA = "ws STRING, k STRING, n LONG"


def frame(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(rows, SCHEMA).selectExpr("to_timestamp(ws) AS ws", "k", "n")


def held(spark: Any, path: str) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(path).selectExpr("date_format(ws, 'yyyy-MM-dd HH:mm:ss')", "k", "n")
    return sorted((tuple(r) for r in rows.collect()), key=repr)


def version(spark: Any, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY {lakehouse.table_ref(path)}").agg({"version": "max"}).first()[0])


def test_merge_upserts_on_the_key_null_safe_and_deletes(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1), ("2024-01-01 00:00:00", None, 2)]), path,
                    ["ws", "k"])
    # a replayed batch with corrected values for 'a' and the NULL group, and a new key 'c'
    again = frame(spark, [("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:00:00", None, 20),
                          ("2024-01-01 00:01:00", "c", 3)])
    lakehouse.merge(again, path, ["ws", "k"])
    lakehouse.merge(again, path, ["ws", "k"])  # replayed again: no duplicates
    assert held(spark, path) == [("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:00:00", None, 20),
                                 ("2024-01-01 00:01:00", "c", 3)]
    keys = frame(spark, [("2024-01-01 00:00:00", None, 0), ("2024-01-01 00:00:00", None, 0),
                         ("2024-01-01 00:05:00", "z", 0)]).select("ws", "k")  # a repeated key, an absent one
    lakehouse.delete(keys, path, ["ws", "k"])
    assert held(spark, path) == [("2024-01-01 00:00:00", "a", 10), ("2024-01-01 00:01:00", "c", 3)]
    lakehouse.delete(keys, str(tmp_path / "none"), ["ws", "k"])  # no table yet: nothing to delete
    assert not (tmp_path / "none").exists()


def test_an_empty_batch_creates_the_table_and_commits_nothing_more(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    lakehouse.merge(frame(spark, []), path, ["ws", "k"])
    assert held(spark, path) == [] and version(spark, path) == 0
    lakehouse.merge(frame(spark, []), path, ["ws", "k"])
    assert version(spark, path) == 0


def test_merge_honours_txn_app_id_and_version(spark: Any, tmp_path: Path) -> None:
    # Delta skips a write whose (app id, version) it already committed: a replay with other rows changes nothing
    path = str(tmp_path / "t")
    lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), path, ["ws", "k"], Txn("app", 0))
    first = version(spark, path)
    lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 99)]), path, ["ws", "k"], Txn("app", 0))
    assert held(spark, path) == [("2024-01-01 00:00:00", "a", 1)] and version(spark, path) == first
    lakehouse.delete(frame(spark, [("2024-01-01 00:00:00", "a", 0)]).select("ws", "k"), path, ["ws", "k"],
                     Txn("app", 0))  # the same marker on a delete: skipped too
    assert held(spark, path) == [("2024-01-01 00:00:00", "a", 1)]
    lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 2)]), path, ["ws", "k"], Txn("app", 1))
    lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "b", 3)]), path, ["ws", "k"], Txn("other", 0))
    assert held(spark, path) == [("2024-01-01 00:00:00", "a", 2), ("2024-01-01 00:00:00", "b", 3)]
    assert spark.conf.get(lakehouse.TXN_APP_ID, None) is None  # the session is left as it was


def test_a_table_of_another_shape_or_a_directory_of_other_files_is_refused(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    spark.createDataFrame([(1,)], "x LONG").write.format("delta").save(path)
    with pytest.raises(ConfigError) as err:
        lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), path, ["ws", "k"])
    assert err.value.field == "target.path" and "has columns [('x', 'bigint')]" in str(err.value)
    other = tmp_path / "files"
    spark.createDataFrame([(1,)], "x LONG").write.parquet(str(other))
    with pytest.raises(ConfigError, match="holds files but no Delta table"):
        lakehouse.merge(frame(spark, [("2024-01-01 00:00:00", "a", 1)]), str(other), ["ws", "k"])
    assert not (other / "_delta_log").exists()


def test_a_column_name_delta_refuses_is_named(spark: Any, tmp_path: Path) -> None:
    df = spark.createDataFrame([(1, 2)], "k LONG, `n (all)` LONG")
    with pytest.raises(ConfigError) as err:
        lakehouse.merge(df, str(tmp_path / "t"), ["k"])
    assert err.value.field == "target" and "'n (all)'" in str(err.value) and "columnMapping" in str(err.value)
    lakehouse.merge(df, str(tmp_path / "t"), ["k"], options={"delta.columnMapping.mode": "name"})
    assert spark.read.format("delta").load(str(tmp_path / "t")).collect() == [(1, 2)]


def test_a_replayed_micro_batch_of_a_real_stream_is_written_once(spark: Any, tmp_path: Path) -> None:
    # A stream's foreachBatch merges micro-batch 1 with the query's marker, then fails before Spark commits
    # it. Restarted on the same checkpoint, Spark replays micro-batch 1; this time the handler would write
    # other values (n + 1000), and Delta skips them: the table holds what the first attempt wrote.
    land, path, ck = tmp_path / "land", str(tmp_path / "t"), str(tmp_path / "ck")
    land.mkdir()
    for i in range(3):
        (land / f"f{i}.json").write_text(json.dumps({"ws": "2024-01-01 00:00:00", "k": f"k{i}", "n": i}) + "\n")
    attempts: list[int] = []

    def handle(df: Any, batch_id: int) -> None:
        stream = lakehouse.stream_id(df.sparkSession, ck)
        assert stream is not None
        replay = bool(attempts) and batch_id == 1 and 1 in attempts
        attempts.append(batch_id)
        rows = df.selectExpr("to_timestamp(ws) AS ws", "k", f"n + {1000 if replay else 0} AS n")
        lakehouse.merge(rows, path, ["ws", "k"], lakehouse.txn(stream, "upsert", batch_id))
        if batch_id == 1 and not replay:
            raise RuntimeError("killed after the sink write, before the commit")

    def run() -> None:
        query = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(land)).writeStream
                 .foreachBatch(handle).option("checkpointLocation", ck).trigger(availableNow=True).start())
        query.awaitTermination()

    with pytest.raises(Exception, match="killed after the sink write"):
        run()
    run()
    assert attempts == [0, 1, 1, 2]
    assert held(spark, path) == [("2024-01-01 00:00:00", f"k{i}", i) for i in range(3)]
    shutil.rmtree(ck)  # the id lives in the checkpoint: a new checkpoint is a new query, a new app id
    assert lakehouse.stream_id(spark, ck) is None
