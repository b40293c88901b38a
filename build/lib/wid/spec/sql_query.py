"""A pipeline's SQL pre-stage is one query: checked when the pipeline is
declared, and run as a subquery so that Spark's own parser refuses anything
else before it runs (docs/trust.md).

A query stage only queries: ``[transform] sql``, ``join.left_sql`` and
``join.right_sql`` are each one Spark SQL query, whose rows are the stage's
input. `check_query` refuses, when the pipeline is declared (so that
``wid validate`` and ``wid explain`` do too, without Spark), what sqlglot's
Spark tokenizer identifies for certain:

- several statements (one trailing ``;`` is fine);
- a statement that is no query: in Spark's grammar a query starts with
  ``SELECT``, ``FROM`` (the FROM-first form, pipe syntax), ``VALUES``,
  ``TABLE``, ``WITH`` (then the statement after its common table
  expressions decides) or ``(``. Anything else is DDL, DML or a command
  (``INSERT``, ``CREATE``, ``SET``, ``CACHE``, ``ADD JAR``, ``EXPLAIN``...);
- ``INSERT INTO`` / ``INSERT OVERWRITE`` anywhere (``FROM t INSERT INTO
  ...``, Hive's multi-insert, starts with ``FROM``);
- the functions that call Java methods (``reflect``, ``java_method``,
  ``try_reflect``, by any qualified or quoted name, or ``IDENTIFIER('...')``
  with a literal), and script transforms (``TRANSFORM (...) USING
  'program'``), which run an external program.

sqlglot does not know all of Spark's syntax, so the check refuses nothing it
cannot tokenize (it reads strings as Spark does by default, with backslash
escapes): Spark is the definitive judge when the stage runs. There the
query runs as ``SELECT * FROM (<query>) AS <alias>`` (`as_subquery`): Spark's
parser accepts only a query inside the parentheses, and ``spark.sql`` parses
the whole text before it executes anything (it executes commands eagerly),
so a statement that slipped past this check is refused there without effect.

These checks keep a query stage a query; they are no sandbox. A query may
read whatever the Spark job can read (``SELECT * FROM text.`/etc/passwd```),
and a pipeline file is code its author runs, as a Spark job is: run only
pipeline files you trust.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import Token, TokenType
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError

from wid.errors import ConfigError

DIALECT = "spark"
# The functions that call a Java method by its name (Spark's CallMethodViaReflection)
JAVA_CALLS = ("reflect", "java_method", "try_reflect")
# The alias of the user's query in `as_subquery`: a name no query of wid's users needs
ALIAS = "_wid_query"
SINGLE_QUERY = "must be a single query (SELECT or WITH ...)"
_QUERY_STARTS = (TokenType.SELECT, TokenType.FROM, TokenType.VALUES, TokenType.TABLE)
_NAME_TOKENS = (TokenType.VAR, TokenType.IDENTIFIER)
_STRINGS = (TokenType.STRING, TokenType.RAW_STRING)
_SETTINGS = ("SET", "RESET")  # their fix differs: settings go in [spark.conf]
_SPARK_LINE = re.compile(r"\bline (\d+)(,? pos \d+)")  # Spark's "(line 2, pos 17)", "; line 2 pos 17"


def _tokens(sql: str) -> list[Token] | None:
    """Spark SQL's tokens of `sql` by sqlglot, comments left out; None
    where sqlglot cannot tokenize it (then Spark judges alone)."""
    try:
        return list(Dialect.get_or_raise(DIALECT).tokenize(sql))
    except TokenError:
        return None


def _statements(tokens: Sequence[Token]) -> list[list[Token]]:
    """`tokens` split at each ``;`` (empty statements kept, but not the
    empty one after a trailing ``;``)."""
    found: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            found.append([])
        else:
            found[-1].append(token)
    return found[:-1] if len(found) > 1 and not found[-1] else found


def _closing(tokens: Sequence[Token], i: int) -> int:
    """The index just after the parenthesis that closes the one at `i`
    (``len(tokens)`` when it is not closed)."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[j].token_type, 0)
        if depth == 0:
            return j + 1
    return len(tokens)


def _after_ctes(tokens: Sequence[Token], i: int) -> int:
    """The index of the statement after the common table expressions of
    the ``WITH`` at `i` (Spark's ``WITH [RECURSIVE] name [(columns)] [AS]
    (query), ...``)."""
    i += 1
    if i < len(tokens) and tokens[i].text.upper() == "RECURSIVE":
        i += 1
    while i < len(tokens):
        i += 1  # the name
        while i < len(tokens) and tokens[i].token_type in (TokenType.L_PAREN, TokenType.ALIAS):
            i = _closing(tokens, i) if tokens[i].token_type == TokenType.L_PAREN else i + 1
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
            continue
        break
    return i


def _leading(tokens: Sequence[Token]) -> Token | None:
    """The token that says what the statement is: its first, past opening
    parentheses and ``WITH`` clauses; None for no such token."""
    i = 0
    while i < len(tokens):
        if tokens[i].token_type == TokenType.L_PAREN:
            i += 1
        elif tokens[i].token_type == TokenType.WITH:
            i = _after_ctes(tokens, i)
        else:
            return tokens[i]
    return None


def _called(tokens: Sequence[Token], i: int) -> str | None:
    """The name of the function called at `i` if it is one that calls Java
    (`JAVA_CALLS`): a name (``reflect``, ```reflect```, the last part of
    ``system.builtin.reflect``) or ``IDENTIFIER('...')`` with a literal,
    followed by ``(``."""
    token, after = tokens[i], tokens[i + 1:i + 5]
    if token.token_type in _NAME_TOKENS and token.text.lower() in JAVA_CALLS:
        return token.text.lower() if after and after[0].token_type == TokenType.L_PAREN else None
    shape = [t.token_type for t in after]
    if token.text.upper() == "IDENTIFIER" and shape == [TokenType.L_PAREN, TokenType.STRING, TokenType.R_PAREN,
                                                        TokenType.L_PAREN]:
        name = after[1].text.replace("`", "").split(".")[-1].lower()
        return name if name in JAVA_CALLS else None
    return None


def _no_calls(field: str, tokens: Sequence[Token]) -> None:
    """Raise ConfigError naming `field` if `tokens` call Java or run a
    program (module docstring)."""
    for i, token in enumerate(tokens):
        name = _called(tokens, i)
        if name is not None:
            raise ConfigError(field, f"calls {name}(), which calls Java methods",
                              "a query stage only queries: compute the value with Spark SQL's functions")
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.token_type == TokenType.USING and nxt is not None and nxt.token_type in _STRINGS:
            raise ConfigError(field, f"runs the program '{nxt.text}' (a script transform: TRANSFORM ... USING)",
                              "a query stage only queries: compute the value with Spark SQL's functions")


def _writes(tokens: Sequence[Token]) -> bool:
    """Whether `tokens` hold ``INSERT INTO`` or ``INSERT OVERWRITE``."""
    return any(a.token_type == TokenType.INSERT and b.token_type in (TokenType.INTO, TokenType.OVERWRITE)
               for a, b in zip(tokens, tokens[1:], strict=False))


def _word(token: Token) -> str:
    """How a statement starting at `token` is named: its first keyword(s)
    (sqlglot reads a command's words as one token, ``ADD JAR``), or the
    token as written."""
    words = " ".join(token.text.split())
    if token.token_type not in (*_STRINGS, TokenType.IDENTIFIER) and words.replace(" ", "").isalpha():
        return words.upper()
    return repr(token.text)


def check_query(field: str, sql: object) -> None:
    """Raise ConfigError naming `field` (``transform.sql``,
    ``join.left_sql``...) unless `sql` may be one Spark SQL query: see the
    module docstring for what is refused, and why only what sqlglot's
    tokenizer identifies for certain. None (no pre-stage) passes."""
    if sql is None:
        return
    if not isinstance(sql, str):
        raise ConfigError(field, f"must be a string holding a query, got {sql!r}")
    tokens = _tokens(sql)
    if tokens is None:
        return
    statements = _statements(tokens)
    if not any(statements):
        raise ConfigError(field, f"{SINGLE_QUERY}, got none (only comments or ;)", "write a query, or remove it")
    if len(statements) > 1:
        what = "an empty statement (a stray ;)" if not all(statements) else f"{len(statements)} statements"
        raise ConfigError(field, f"{SINGLE_QUERY}, got {what}", "keep one query (one trailing ; is fine)")
    _no_calls(field, tokens)
    lead = _leading(tokens)
    if lead is not None and lead.token_type not in _QUERY_STARTS:
        word = _word(lead)
        fix = ("put Spark settings in [spark.conf]" if word in _SETTINGS else
               "a query stage only queries: write one SELECT over the sources (wid writes the windows to the target)")
        raise ConfigError(field, f"{SINGLE_QUERY}, not a statement starting with {word}", fix)
    if _writes(tokens):
        raise ConfigError(field, f"{SINGLE_QUERY}, not an INSERT statement",
                          "a query stage only queries: wid writes the windows to the target")


def query_text(sql: str) -> str:
    """`sql` without its one trailing ``;`` (and what follows it: spaces,
    comments), as it goes inside parentheses."""
    tokens = _tokens(sql)
    if tokens is None:
        return re.sub(r";\s*\Z", "", sql)
    if tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        return sql[:tokens[-1].start]
    return sql


def as_subquery(sql: str) -> str:
    """The statement the stage runs for query `sql`: ``SELECT * FROM (sql)
    AS`` `ALIAS`, its columns those of `sql`, in order. Spark's parser
    accepts only a query inside the parentheses (module docstring). The
    query stands on lines of its own, so that a trailing ``--`` comment
    ends before the closing parenthesis."""
    return f"SELECT * FROM (\n{query_text(sql)}\n) AS {ALIAS}"


def spark_position(message: str, sql: str) -> str:
    """Spark's error `message` about `as_subquery`'s statement for query
    `sql`, its ``line N, pos P`` made a line of `sql` (one line up); an
    error at the subquery's closing parenthesis is at the end of `sql`."""
    last = query_text(sql).count("\n") + 1

    def line(m: re.Match[str]) -> str:
        n = int(m.group(1)) - 1
        return f"line {n}{m.group(2)}" if 1 <= n <= last else "at the end of the query"

    if (found := _SPARK_LINE.search(message)) and int(found.group(1)) - 1 > last:
        message = message.replace(" at or near ')'", "")
    return _SPARK_LINE.sub(line, message)


__all__ = ["ALIAS", "JAVA_CALLS", "SINGLE_QUERY", "as_subquery", "check_query", "query_text", "spark_position"]
