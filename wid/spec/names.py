"""Validation of column names used in specs."""

from __future__ import annotations

from wid.errors import ConfigError


def check_name(field: str, value: object, fix: str | None = None) -> str:
    """Return `value` if it is a usable column name, else raise ConfigError.

    A usable name is a non-empty string without leading or trailing spaces
    and without backticks or dots (which Spark would parse as nesting).
    """
    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be a non-empty column name, got {value!r}", fix)
    if value != value.strip() or "`" in value or "." in value:
        raise ConfigError(
            field,
            f"column name {value!r} has spaces at its ends, a backtick or a dot",
            "rename the column in a [transform] sql pre-stage",
        )
    return value


def check_names(field: str, values: object) -> tuple[str, ...]:
    """Validate a list of column names (a string is taken as a one-item list)."""
    if isinstance(values, str):
        values = (values,)
    if not isinstance(values, list | tuple):
        raise ConfigError(field, f"must be a list of column names, got {values!r}")
    names = tuple(check_name(f"{field}[{i}]", v) for i, v in enumerate(values))
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConfigError(field, f"column '{name}' is listed twice", "list each column once")
        seen.add(name)
    return names
