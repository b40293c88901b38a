"""Spark SQL text: a name as a quoted identifier (`ident`), a text as a
string literal (`sql_string`).

Pure string functions, so that every layer that writes Spark SQL as text
quotes the same way: the plans (`wid.spark.columns`, which re-exports
them), the source reader (`wid.io.sources`), the table sinks
(`wid.io.lakehouse`, `wid.io.iceberg`). Quoting follows Spark SQL's lexer:
backticks around an identifier, a backtick inside doubled; single quotes
around a literal, with backslash escapes inside.
"""

from __future__ import annotations


def ident(name: str) -> str:
    """Column (or table) `name` as a quoted Spark SQL identifier (any
    backtick doubled): ``a`b`` becomes ```a``b```."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """`text` as a Spark SQL string literal (Spark reads backslash escapes
    in literals, so backslashes and quotes are escaped): ``it's`` becomes
    ``'it\\'s'``."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["ident", "sql_string"]
