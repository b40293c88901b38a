"""What differs between the PySpark releases wid runs on (`wid.doctor.PYSPARK_RANGE`),
found by looking for the feature, never by reading the version string.

- **Arrow schemas** (`arrow_schema`): PySpark 4.3's ``to_arrow_schema`` takes
  the session's ``timezone`` and labels ``TimestampType`` with it; earlier
  releases take no time zone and label it UTC. The label is all that
  differs: a ``TimestampType`` value is an instant either way, and PySpark
  reads a zoned timestamp back as that instant.
"""

from __future__ import annotations

import inspect
from typing import Any

from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema


def arrow_schema(schema: T.StructType, timezone: str) -> Any:
    """`schema` as a ``pyarrow.Schema``, ``TimestampType`` as microsecond
    timestamps labelled `timezone` where PySpark takes one (UTC before)."""
    zone: dict[str, Any] = {"timezone": timezone}  # a keyword only some releases' signatures have
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(schema, **zone)
    return to_arrow_schema(schema)


__all__ = ["arrow_schema"]
