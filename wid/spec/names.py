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
            "rename the column (DataFrame.withColumnRenamed)",
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


IDENTIFIER_BYTES = 63  # PostgreSQL keeps the first 63 bytes of a name: longer ones could collide
IDENTIFIER_RULE = (f"letters, digits and _, not starting with a digit, at most {IDENTIFIER_BYTES} bytes in UTF-8 "
                   "(any script's letters)")


def is_identifier(value: object) -> bool:
    """True when `value` is a name wid writes into SQL (a table, a column):
    see `IDENTIFIER_RULE`. Reserved words are fine: names are always quoted
    by the database driver's own quoting."""
    if not isinstance(value, str) or not value or len(value.encode()) > IDENTIFIER_BYTES:
        return False
    return (value[0].isalpha() or value[0] == "_") and all(c.isalnum() or c == "_" for c in value)


def check_identifier(field: str, value: object, fix: str | None = None) -> str:
    """Return `value` if it is a SQL identifier by `IDENTIFIER_RULE`, else
    raise ConfigError naming `field`."""
    if not isinstance(value, str) or not value:
        raise ConfigError(field, f"must be a non-empty name of {IDENTIFIER_RULE}, got {value!r}", fix)
    if not is_identifier(value):
        raise ConfigError(field, f"{value!r} is not a name wid writes to a database: use {IDENTIFIER_RULE}",
                          fix or "choose another name")
    return str(value)
