"""A stream that fails names its root cause in one line: a wid error
raised inside the stream (its foreachBatch writer) is that wid error;
anything else is the innermost cause Spark's message holds
(`wid.spark.errors.root_cause`).

Real failing streams where they are cheap (a ConfigError inside
foreachBatch, a Python exception in a sink, a Parquet schema mismatch, an
invalid Kafka topic against the real broker), and, for failures a test
cannot cause cheaply, the messages real runs of wid's pipelines raised
(`failures/`, PySpark 4.3, classic and Spark Connect): a SQLite target and a
checkpoint on a full 1 MiB tmpfs, a Kafka target with no broker (producer
``max.block.ms`` 3000), a PostgreSQL target whose ``url_env`` is not set
where the writer runs.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import land, pipeline_toml
from wid.errors import ConfigError
from wid.pipelines.run import run as run_pipeline
from wid.spark.errors import root_cause, translate
from wid.spec.toml_io import loads_pipeline

FAILURES = Path(__file__).parent / "failures"
TUMBLING = pipeline_toml('kind = "tumbling"\nduration_ms = 10000', name="failing")


def failure(name: str) -> str:
    return (FAILURES / f"{name}.txt").read_text(encoding="utf-8")


def one_line(cause: str | None) -> str:
    assert cause is not None and "\n" not in cause and "SQLSTATE" not in cause and "Traceback" not in cause, cause
    return cause


@pytest.mark.parametrize("name", ["sqlite_full", "connect_sqlite_full"])
def test_a_python_exception_in_the_writer_is_its_last_exception_line(name: str) -> None:
    assert translate(Exception(failure(name))) is None
    assert one_line(root_cause(failure(name))) == "sqlite3.OperationalError: database or disk is full"


@pytest.mark.parametrize("name", ["checkpoint_full", "connect_checkpoint_full"])
def test_a_full_checkpoint_disk_is_the_jvms_innermost_cause_with_sparks_error(name: str) -> None:
    cause = one_line(root_cause(failure(name)))
    assert cause.startswith("java.io.IOException: No space left on device ("), cause
    assert "[CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT] Error writing state store files" in cause, cause


def test_a_kafka_timeout_is_the_jvms_innermost_cause() -> None:
    assert one_line(root_cause(failure("kafka_timeout"))) == \
        "org.apache.kafka.common.errors.TimeoutException: Topic windows not present in metadata after 3000 ms."


@pytest.mark.parametrize("name", ["config_env", "connect_config_env"])
def test_a_wid_error_inside_foreach_batch_is_that_error(name: str) -> None:
    err = translate(Exception(failure(name)))
    assert isinstance(err, ConfigError) and err.field == "target.url_env", err
    assert str(err) == "target.url_env: environment variable WID_NO_SUCH_URL is not set"


def test_texts_without_a_cause_have_none() -> None:
    assert root_cause("") is None and root_cause("no such table: windows") is None


def test_the_rule_reads_the_last_cause_of_any_trace() -> None:
    """Python's chained tracebacks end with the exception raised last; a
    JVM trace's innermost cause is its last ``Caused by:``; Spark's own
    error classes under it keep their message."""
    chained = ("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\nKeyError: 'k'\n\n"
               "During handling of the above exception, another exception occurred:\n\n"
               "Traceback (most recent call last):\n  File \"a.py\", line 3, in f\n    h()\n"
               "psycopg.errors.DiskFull: could not extend file\n")
    assert root_cause(chained) == "psycopg.errors.DiskFull: could not extend file"
    spark_only = "[STREAM_FAILED] Query [id = 1] terminated with exception: [DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012"
    assert root_cause(spark_only) == "[DIVIDE_BY_ZERO] Division by zero."


def write(tmp_path: Path, text: str) -> Any:
    """The pipeline `text` over a minute of rows: windows close, so the target is written."""
    land(tmp_path / "land", [[json.dumps({"k": "a", "ts": 1_700_000_000_000 + i * 1000, "v": 1.0}) for i in range(60)]])
    return loads_pipeline(text, base_dir=str(tmp_path))


def with_target(target: str) -> str:
    head, rest = TUMBLING.split("[target]")
    return head + target + "\n[dead_letter]" + rest.split("[dead_letter]")[1]


def test_a_config_error_inside_foreach_batch_is_raised_as_itself(spark: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WID_ROOT_CAUSE_URL", raising=False)  # read where the writer runs, as a micro-batch is written
    spec = write(tmp_path, with_target('[target]\nkind = "postgres"\nurl_env = "WID_ROOT_CAUSE_URL"\ntable = "w"\n'))
    with pytest.raises(ConfigError) as err:
        run_pipeline(spec, spark)
    # the sink's connection is checked before Spark starts, and the error names the field as the TOML does
    assert err.value.field == "target.url_env" and "WID_ROOT_CAUSE_URL is not set" in str(err.value)


def test_a_python_exception_in_a_sink_is_its_own_line(spark: Any, tmp_path: Path) -> None:
    """A sink whose database refuses to grow (SQLite's page cap): SQLite's
    own "database or disk is full"."""
    db = str(tmp_path / "capped.sqlite")

    def into_sqlite(batch: Any, _: int) -> None:
        rows = [(r.value,) for r in batch.collect()]
        with sqlite3.connect(db) as con:
            con.execute("PRAGMA max_page_count = 2")
            con.execute("CREATE TABLE IF NOT EXISTS t (v TEXT)")
            con.executemany("INSERT INTO t VALUES (?)", rows * 100)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.txt").write_text("".join(f"row {i} {'x' * 50}\n" for i in range(50)))
    query = spark.readStream.text(str(tmp_path / "in")).writeStream.foreachBatch(into_sqlite) \
        .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start()
    with pytest.raises(Exception) as err:
        query.awaitTermination(300)
    assert translate(err.value) is None
    assert one_line(root_cause(str(err.value))) == "sqlite3.OperationalError: database or disk is full"


def test_a_parquet_schema_mismatch_is_sparks_error(spark: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "land").mkdir()
    pq.write_table(pa.table({"k": ["a"], "ts": [1_700_000_000_000], "v": [1.0]}), tmp_path / "land" / "a.parquet")
    pq.write_table(pa.table({"k": ["a"], "ts": ["late"], "v": ["1.0"]}), tmp_path / "land" / "b.parquet")
    spec = loads_pipeline(TUMBLING.replace('format = "json"', 'format = "parquet"'), base_dir=str(tmp_path))
    with pytest.raises(Exception) as err:
        run_pipeline(spec, spark)
    cause = one_line(root_cause(str(err.value)))
    assert cause.startswith("[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] ") and "b.parquet" in cause, cause
    assert "Parquet column [ts]" in cause, cause


def test_an_invalid_kafka_topic_is_kafkas_error(spark: Any, kafka: Any, tmp_path: Path) -> None:
    spec = write(tmp_path, with_target(f'[target]\nkind = "kafka"\ntopic = "bad topic!"\n'
                                       f'bootstrap_servers = "{kafka.bootstrap}"\n'))
    with pytest.raises(Exception) as err:
        run_pipeline(spec, spark)
    # a failed task is tried again on a local master (wid.spark.spark_session.with_task_retries), and Spark reports the last attempt's
    # error: Kafka words it "Invalid topics: [bad topic!]" the first time, "bad topic!" once its metadata is cached
    cause = one_line(root_cause(str(err.value)))
    assert cause.startswith("org.apache.kafka.common.errors.InvalidTopicException: ") and "bad topic!" in cause, cause
