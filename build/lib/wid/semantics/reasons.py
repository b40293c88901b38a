"""Dead-letter reasons, shared by the oracle and the Spark engine so both
reject the same rows with the same words (docs/semantics.md#completeness)."""

from __future__ import annotations

NULL_EVENT_TIME = "null event time"
UNPARSEABLE_EVENT_TIME = "unparseable event time"
BEFORE_LANDMARK = "event time before landmark_ms"
OUT_OF_RANGE = "event time out of range"  # outside Spark's TIMESTAMP range, or too large to convert (timeunits)
IN_FUTURE = "event time in the future"  # more than max_future_ms ahead of the micro-batch's processing time
MALFORMED = "malformed record (unparseable, not valid UTF-8, or a value of the wrong type)"


def null_key(column: str) -> str:
    """The reason for a NULL in group or partition column `column`."""
    return f"null group key: {column}"


def bad_gap(column: str) -> str:
    """The reason for a NULL or non-positive per-row session gap."""
    return f"null or non-positive session gap: {column}"
LATE = "late: its window was already emitted"
# window joins on a stream (wid.semantics.window_join_stream)
JOIN_LATE_RIGHT = "late: every window that could hold it has fired"
JOIN_LATE_LEFT = "late: right rows its window needs were released (garbage_size)"
JOIN_LATE_LEFT_ORDER = "late: behind its key's last left time (window (0, 0) needs left rows in time order)"


def not_a_number(column: str) -> str:
    """The reason for a string value an aggregation reads as a number but
    that does not parse as one (CSV read without a schema, say)."""
    return f"not a number: {column}"
