"""A crash during a query's first offset-log write leaves Spark's temporary
file in ``offsets``, after which Spark refuses the checkpoint for good;
`discard_interrupted_first_offset` clears exactly that case (checked
against Spark's own refusal and its own run of the stream). Spark 4.0 does
not refuse such a checkpoint; the files are cleared there all the same."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyspark
import pytest
from pyspark.sql import SparkSession

from wid.spark.stream_query import discard_interrupted_first_offset


def _stray_first_offset(checkpoint: Path) -> list[str]:
    offsets = checkpoint / "offsets"
    offsets.mkdir(parents=True)
    names = [".0.3fd64b1c-60a0-4239-b9bf-f1f6e3c428c5.tmp", "..0.3fd64b1c-60a0-4239-b9bf-f1f6e3c428c5.tmp.crc"]
    for name in names:
        (offsets / name).write_text("")
    return names


def _run(spark: SparkSession, land: Path, checkpoint: Path) -> int:
    seen: list[int] = []
    stream = spark.readStream.schema("k LONG").json(str(land))
    query = (stream.writeStream.foreachBatch(lambda df, _: seen.append(df.count()))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    return sum(seen)


def spark_verifies_a_new_checkpoint() -> bool:
    """Whether this Spark refuses a new query's non-empty checkpoint (its
    error conditions name the refusal): from 4.1 on; 4.0 does not check."""
    jar = next((Path(pyspark.__file__).parent / "jars").glob("spark-common-utils_*.jar"))
    with zipfile.ZipFile(jar) as z:
        return b"CHECKPOINT_LOCATION_NOT_EMPTY" in z.read("error/error-conditions.json")


def test_a_crash_in_the_first_offset_write_no_longer_blocks_the_checkpoint(spark: SparkSession, tmp_path: Path) -> None:
    land = tmp_path / "land"
    land.mkdir()
    (land / "a.json").write_text("".join(f'{{"k": {i}}}\n' for i in range(7)))
    checkpoint = tmp_path / "ck"
    names = _stray_first_offset(checkpoint)
    if spark_verifies_a_new_checkpoint():
        with pytest.raises(Exception, match="CHECKPOINT_LOCATION_NOT_EMPTY"):  # Spark's refusal, without the fix
            _run(spark, land, checkpoint)
    # Hadoop's local file system lists a file without its checksum, and deletes both
    assert discard_interrupted_first_offset(spark, str(checkpoint)) == [names[0]]
    assert list((checkpoint / "offsets").iterdir()) == []
    assert _run(spark, land, checkpoint) == 7


def test_a_logged_batch_is_never_touched(spark: SparkSession, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ck"
    _stray_first_offset(checkpoint)
    (checkpoint / "offsets" / "0").write_text("v1\n")
    assert discard_interrupted_first_offset(spark, str(checkpoint)) == []
    assert len(list((checkpoint / "offsets").iterdir())) == 3
    assert discard_interrupted_first_offset(spark, str(tmp_path / "absent")) == []
