"""A crash during a query's first offset-log write leaves Spark's temporary
file in ``offsets``, after which Spark refuses the checkpoint for good;
`wid.spark.stream_query.start` starts such a checkpoint, and only such a
one (checked against Spark's own refusal and its own run of the stream).
Spark 4.0 has no such check (nor its setting): there the checkpoint starts
as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from wid.spark import stream_query


def _stray_first_offset(checkpoint: Path) -> None:
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True)
    for name in (".0.3fd64b1c-60a0-4239-b9bf-f1f6e3c428c5.tmp", "..0.3fd64b1c-60a0-4239-b9bf-f1f6e3c428c5.tmp.crc"):
        (offsets / name).write_text("")


def _landed(spark: SparkSession, tmp_path: Path) -> DataFrame:
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text("".join(f'{{"k": {i}}}\n' for i in range(7)))
    return spark.readStream.schema("k LONG").json(str(land))


def _run_with_spark(stream: DataFrame, checkpoint: Path) -> None:
    query = (stream.writeStream.foreachBatch(lambda df, _: None).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()


def _run_with_wid(stream: DataFrame, checkpoint: Path, tmp_path: Path) -> int:
    out = tmp_path / "out"  # where the rows went: read back, since a Connect server runs the handler
    query = stream_query.start(stream, str(checkpoint), lambda df, _: df.write.mode("append").parquet(str(out)),
                               {"availableNow": True})
    query.awaitTermination()
    return stream.sparkSession.read.parquet(str(out)).count()


def test_a_crash_in_the_first_offset_write_no_longer_blocks_the_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    stream, checkpoint = _landed(spark, tmp_path), tmp_path / "ck"
    _stray_first_offset(checkpoint)
    verifies = spark.conf.isModifiable(stream_query.VERIFY_NEW)  # from Spark 4.1
    if verifies:
        with pytest.raises(Exception, match="CHECKPOINT_LOCATION_NOT_EMPTY"):  # Spark's refusal, without the fix
            _run_with_spark(stream, checkpoint)
    assert stream_query.never_logged(spark, str(checkpoint))
    assert _run_with_wid(stream, checkpoint, tmp_path) == 7
    if verifies:
        assert spark.conf.get(stream_query.VERIFY_NEW) == "true"  # the check is off for that one start only


def test_a_checkpoint_holding_state_keeps_sparks_check(spark: SparkSession, tmp_path: Path) -> None:
    stream, checkpoint = _landed(spark, tmp_path), tmp_path / "ck"
    _stray_first_offset(checkpoint)
    (checkpoint / "state" / "0" / "0").mkdir(parents=True)
    (checkpoint / "state" / "0" / "0" / "1.changelog").write_text("")  # another query's state
    assert not stream_query.never_logged(spark, str(checkpoint))
    if spark.conf.isModifiable(stream_query.VERIFY_NEW):  # Spark 4.1 on: its check stays on
        with pytest.raises(Exception, match="CHECKPOINT_LOCATION_NOT_EMPTY"):
            _run_with_wid(stream, checkpoint, tmp_path)


def test_a_logged_batch_is_a_restart(spark: SparkSession, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ck"
    _stray_first_offset(checkpoint)
    (checkpoint / "offsets" / "0").write_text("v1\n")
    assert not stream_query.never_logged(spark, str(checkpoint))
    assert stream_query.never_logged(spark, str(tmp_path / "absent"))
