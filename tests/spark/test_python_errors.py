"""The Python API's errors in Python's words: a pandas DataFrame is named
with the conversion; a missing column lists the input's own columns
(never wid's internal ``_wid_`` ones) and advises Python, while ``wid
run`` on a pipeline file advises its SQL pre-stage."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import wid
from wid import Aggregation, ConfigError, InputError, Window
from wid.spec.toml_io import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
WINDOW = Window.tumbling(duration="5 minutes", event_time_column="ts", group_by=["store"],
                         aggregations=[Aggregation("sum", "amount", as_="total")])


def test_a_pandas_dataframe_is_named_with_the_conversion() -> None:
    frame = pd.DataFrame({"store": ["a"], "ts": [pd.Timestamp("2024-05-01 09:01")], "amount": [1.0]})
    for call in (lambda: wid.aggregate(frame, WINDOW), lambda: wid.window_result({"shops": frame}, WINDOW)):
        with pytest.raises(InputError, match=r"^(df|shops) is a pandas DataFrame, not a Spark DataFrame\. Fix: "
                                             r"make one with spark\.createDataFrame\("):
            call()


def test_a_missing_column_lists_the_user_s_columns_in_python_s_words(spark: Any) -> None:
    df = spark.createDataFrame([("north", None, 1.0)], "shop STRING, ts TIMESTAMP, amount DOUBLE")
    with pytest.raises(ConfigError) as err:
        wid.aggregate(df, WINDOW)
    assert str(err.value) == ("group_by: column 'store' is not in the input (columns: shop, ts, amount). "
                              "Fix: fix the name, or derive the column (DataFrame.withColumn)")


def test_a_pipeline_s_missing_column_lists_no_internal_column_and_advises_its_sql(spark: Any, tmp_path: Path) -> None:
    """A CSV source without a schema: Spark reads its columns, wid adds its
    own for malformed rows; the error names the file's columns only."""
    for name in ("payments.toml", "payments.csv"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    toml = tmp_path / "payments.toml"
    toml.write_text(toml.read_text().replace('schema = "shop STRING, ts TIMESTAMP, amount DOUBLE"\n', "")
                    .replace('group_by = ["shop"]', 'group_by = ["store"]'))
    with pytest.raises(ConfigError) as err:
        wid.run_pipeline(load_pipeline(toml), spark)
    assert "(columns: shop, ts, amount)" in str(err.value) and "_wid_" not in str(err.value)
    assert "[transform] sql pre-stage" in str(err.value.in_toml())
