"""Times as text in Spark SQL, whatever the session's time zone.

Spark renders a ``TIMESTAMP`` (an instant) as text in the session's time
zone (``date_format``, ``CAST(... AS STRING)``, ``to_json``) and reads a
text without an offset in it too (``to_timestamp``). wid's results are
instants and its sessions set UTC, but a pipeline's ``[spark] conf`` or a
user's own session may set any zone, and the text wid writes (SQL sinks,
the console, Kafka values, dead letters, messages) must still name the
same instants. So every place where an instant becomes text, or text an
instant, goes through this module:

- `utc_text`: an instant as ISO-8601 UTC text ending in ``Z``, computed
  from its epoch microseconds through a ``TIMESTAMP_NTZ`` (whose text has
  no zone), so no session zone takes part;
- `wall_text`: a ``TIMESTAMP_NTZ`` (a wall-clock time) as ISO-8601 text
  without a zone marker: it is not an instant, and a ``Z`` would say UTC;
- `JSON_OPTIONS`, `ROW_JSON_OPTIONS` and `row_json_sql`: ``to_json``'s options
  that write instants in UTC and both kinds of times to the microsecond (Spark's
  default keeps milliseconds, so a dead letter would lose a row's digits);
- `instant_from_text`: the rule for text event times (docs/semantics.md#time):
  a text with an offset (``Z``, ``+05:45``, a region) is that instant; one
  without is read in the given zone (the window's ``time_zone``), else in
  UTC. Spark's JSON reader takes exactly this rule from its ``timeZone``
  option, and Spark's own parser accepts the same forms as
  ``to_timestamp``.

Pure string functions (SQL text), so that the plans and io, which import
nothing of each other, write the same text (as `wid.spec.sql_text` quotes).
"""

from __future__ import annotations

from wid.spec.sql_text import sql_string

ISO_SECONDS = "yyyy-MM-dd'T'HH:mm:ss"
ISO_MICROS = ISO_SECONDS + ".SSSSSS"
EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
# to_json / from_json options: instants in UTC with their offset (XXX writes Z for UTC), wall-clock times
# without one, both to the microsecond (Spark's own timestamp resolution).
JSON_OPTIONS = {"timeZone": "UTC", "timestampFormat": ISO_MICROS + "XXX", "timestampNTZFormat": ISO_MICROS}
ROW_JSON_OPTIONS = {**JSON_OPTIONS, "ignoreNullFields": "false"}  # a row as JSON: every field, NULLs included


def utc_wall(instant: str) -> str:
    """SQL text: the ``TIMESTAMP`` expression `instant` as the
    ``TIMESTAMP_NTZ`` of its UTC wall clock (from its epoch microseconds:
    no session zone takes part)."""
    return f"timestampadd(MICROSECOND, unix_micros({instant}), {EPOCH_NTZ})"


def wall_text(wall: str, micros: bool = True) -> str:
    """SQL text: the ``TIMESTAMP_NTZ`` expression `wall` as ISO-8601 text
    without a zone (``2013-03-10T02:30:00.000000``; to the second without
    `micros`). NULL stays NULL."""
    return f"date_format({wall}, {sql_string(ISO_MICROS if micros else ISO_SECONDS)})"


def utc_text(instant: str, micros: bool = True) -> str:
    """SQL text: the ``TIMESTAMP`` expression `instant` as ISO-8601 UTC text
    ending in ``Z`` (``2013-03-10T05:00:00.000000Z``; to the second without
    `micros`), whatever the session's time zone. NULL stays NULL."""
    return f"concat({wall_text(utc_wall(instant), micros)}, 'Z')"


def row_json_sql(struct: str) -> str:
    """SQL text: ``to_json`` of the struct expression `struct` with
    `ROW_JSON_OPTIONS`'s options."""
    options = "map(" + ", ".join(f"{sql_string(k)}, {sql_string(v)}" for k, v in ROW_JSON_OPTIONS.items()) + ")"
    return f"to_json({struct}, {options})"


def instant_from_text(text: str, zone: str | None = None) -> str:
    """SQL text: the string expression `text` as a ``TIMESTAMP`` by the rule
    for text event times (module docstring): its own offset when it has
    one, else read in `zone` (an IANA name), else in UTC; NULL when it does
    not parse. A wall time in a daylight-saving gap moves forward by the
    gap, and a repeated one is its first instant, as Spark's
    ``to_utc_timestamp`` and Python's ``fold = 0`` have it."""
    options = f"map('timeZone', {sql_string(zone or 'UTC')})"
    return f"from_json(to_json(named_struct('t', {text})), 't TIMESTAMP', {options}).t"


__all__ = ["EPOCH_NTZ", "ISO_MICROS", "ISO_SECONDS", "JSON_OPTIONS", "ROW_JSON_OPTIONS", "instant_from_text",
           "row_json_sql", "utc_text", "utc_wall", "wall_text"]
