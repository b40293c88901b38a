"""Defaults of the sessions wid creates."""

from __future__ import annotations

from typing import Any

import pytest

from wid.spark.spark_session import ARROW_MAX_BYTES, local_cores, session_conf


def test_wid_sessions_turn_off_the_per_row_arrow_byte_check(spark: Any) -> None:
    # Spark 4 counts the bytes of the Arrow batch after every row it sends to Python
    # unless maxBytesPerBatch is exactly Int.MaxValue; rows per batch stay capped
    assert spark.conf.get(ARROW_MAX_BYTES) == str(2**31 - 1)
    assert int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")) > 0


def test_local_cores_reads_the_master() -> None:
    assert local_cores("local[3]") == 3 and local_cores("local") == 1 and local_cores("spark://h:7077") is None


def test_local_sessions_default_to_one_shuffle_partition_per_core() -> None:
    assert session_conf("local[3]", {})["spark.sql.shuffle.partitions"] == "3"
    assert session_conf("local[3]", {"spark.sql.shuffle.partitions": 8})["spark.sql.shuffle.partitions"] == 8
    assert "spark.sql.shuffle.partitions" not in session_conf("spark://h:7077", {})


@pytest.mark.leg
def test_the_progress_display_counts_spark_tasks_where_the_session_reports_them(spark: Any) -> None:
    # Spark Connect streams each operation's stage progress to the client; a classic session
    # reports it only inside the driver's JVM, which wid does not reach for: there, the step alone
    import io

    from pyspark.sql import functions as F
    from rich.console import Console

    from wid.progress import SparkProgress
    from wid.spark.spark_session import is_connect

    @F.udf("long")
    def slow(i: int) -> int:  # longer than the server's interval between progress reports (2 s)
        import time

        time.sleep(3)
        return i

    with SparkProgress(spark, Console(file=io.StringIO())) as progress:
        progress.step("counting")
        spark.range(0, 4, 1, 4).select(slow("id").alias("id")).groupBy(F.col("id") % 3).count().collect()
        total = progress.progress.tasks[0].total
    assert (total is not None and total >= 4) == is_connect(spark)
