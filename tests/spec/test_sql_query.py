"""A SQL pre-stage is one query (wid.spec.sql_query, docs/trust.md): what is
refused when a pipeline is declared, what is accepted (every query the
examples and the tests use), and that neither changes with comments,
spaces or letter case."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wid.errors import ConfigError
from wid.spec.join import ColumnMetric, JoinStage, WindowJoin
from wid.spec.sql_query import ALIAS, as_subquery, check_query, query_text, spark_position

ROOT = Path(__file__).resolve().parents[2]

# Each statement as its lexemes: the property tests join them with spaces, comments and line breaks.
REFUSED = {
    "insert overwrite directory": ["INSERT", "OVERWRITE", "DIRECTORY", "'elsewhere'", "USING", "text", "SELECT", "'w'"],
    "insert into": ["INSERT", "INTO", "t", "SELECT", "*", "FROM", "source"],
    "insert after with": ["WITH", "a", "AS", "(", "SELECT", "1", ")", "INSERT", "INTO", "t", "SELECT", "*", "FROM",
                          "a"],
    "insert after ctes with columns": ["WITH", "a", "(", "x", ")", "AS", "(", "SELECT", "1", ")", ",", "b", "AS", "(",
                                       "SELECT", "2", ")", "INSERT", "OVERWRITE", "TABLE", "t", "SELECT", "*",
                                       "FROM", "a"],
    "multi-insert": ["FROM", "source", "INSERT", "INTO", "t", "SELECT", "*"],
    "update": ["UPDATE", "t", "SET", "a", "=", "1"],
    "delete": ["DELETE", "FROM", "t", "WHERE", "a", "=", "1"],
    "merge": ["MERGE", "INTO", "t", "USING", "s", "ON", "t.k", "=", "s.k", "WHEN", "MATCHED", "THEN", "DELETE"],
    "create table": ["CREATE", "TABLE", "t", "AS", "SELECT", "1"],
    "create view": ["CREATE", "TEMPORARY", "VIEW", "v", "AS", "SELECT", "1"],
    "drop": ["DROP", "TABLE", "t"],
    "alter": ["ALTER", "TABLE", "t", "ADD", "COLUMNS", "(", "x", "INT", ")"],
    "truncate": ["TRUNCATE", "TABLE", "t"],
    "load data": ["LOAD", "DATA", "LOCAL", "INPATH", "'/tmp/x'", "INTO", "TABLE", "t"],
    "set": ["SET", "spark.sql.shuffle.partitions", "=", "7"],
    "set alone": ["SET"],
    "reset": ["RESET"],
    "cache": ["CACHE", "TABLE", "source"],
    "uncache": ["UNCACHE", "TABLE", "source"],
    "clear cache": ["CLEAR", "CACHE"],
    "add jar": ["ADD", "JAR", "'/tmp/x.jar'"],
    "refresh": ["REFRESH", "TABLE", "t"],
    "use": ["USE", "db"],
    "show": ["SHOW", "TABLES"],
    "describe": ["DESCRIBE", "source"],
    "explain": ["EXPLAIN", "SELECT", "1"],
    "analyze": ["ANALYZE", "TABLE", "t", "COMPUTE", "STATISTICS"],
    "msck": ["MSCK", "REPAIR", "TABLE", "t"],
    "execute immediate": ["EXECUTE", "IMMEDIATE", "'SELECT 1'"],
    "two statements": ["SELECT", "1", ";", "SELECT", "2"],
    "a query then a command": ["SELECT", "*", "FROM", "source", ";", "SET", "a", "=", "1"],
    "a stray semicolon": ["SELECT", "1", ";", ";"],
    "reflect": ["SELECT", "reflect", "(", "'java.lang.Thread'", ",", "'sleep'", ",", "1L", ")"],
    "java_method": ["SELECT", "java_method", "(", "'java.lang.Math'", ",", "'abs'", ",", "-1", ")"],
    "try_reflect": ["SELECT", "k", ",", "try_reflect", "(", "'java.lang.Math'", ",", "'abs'", ",", "v", ")",
                    "FROM", "source"],
    "qualified reflect": ["SELECT", "system.builtin.reflect", "(", "'a'", ",", "'b'", ")"],
    "quoted reflect": ["SELECT", "`reflect`", "(", "'a'", ",", "'b'", ")"],
    "reflect by IDENTIFIER": ["SELECT", "IDENTIFIER", "(", "'reflect'", ")", "(", "'a'", ",", "'b'", ")"],
    "reflect in a subquery": ["SELECT", "*", "FROM", "(", "SELECT", "reflect", "(", "'a'", ",", "'b'", ")", ")"],
    "script transform": ["SELECT", "TRANSFORM", "(", "k", ")", "USING", "'cat'", "AS", "(", "b", ")", "FROM",
                         "source"],
}
ACCEPTED = {
    "select": ["SELECT", "*", "FROM", "source"],
    "trailing semicolon": ["SELECT", "k", ",", "v", "FROM", "source", ";"],
    "with": ["WITH", "a", "AS", "(", "SELECT", "k", "FROM", "source", ")", "SELECT", "*", "FROM", "a"],
    "with columns, two ctes": ["WITH", "a", "(", "x", ")", "AS", "(", "SELECT", "1", ")", ",", "b", "AS", "(",
                               "SELECT", "2", ")", "SELECT", "*", "FROM", "a", ",", "b"],
    "from first": ["FROM", "source", "SELECT", "k", ",", "v", "WHERE", "v", ">", "0"],
    "pipe syntax": ["FROM", "source", "|>", "WHERE", "v", ">", "0"],
    "values": ["VALUES", "(", "1", ",", "'a'", ")", ",", "(", "2", ",", "'b'", ")"],
    "table": ["TABLE", "source"],
    "parenthesised": ["(", "(", "SELECT", "1", ")", ")"],
    "set operation": ["(", "SELECT", "k", "FROM", "source", ")", "UNION", "ALL", "(", "SELECT", "k", "FROM",
                      "other", ")"],
    "parenthesised with": ["(", "WITH", "a", "AS", "(", "SELECT", "1", ")", "SELECT", "*", "FROM", "a", ")"],
    "higher-order transform": ["SELECT", "transform", "(", "xs", ",", "x", "->", "x", "+", "1", ")", "AS", "ys",
                               "FROM", "source"],
    "join using": ["SELECT", "*", "FROM", "a", "JOIN", "b", "USING", "(", "k", ")"],
    "a column named reflect": ["SELECT", "reflect", ",", "java_method", "FROM", "source"],
    "words in strings": ["SELECT", "'INSERT INTO t; SET a = 1; reflect(1)'", "AS", "s", "FROM", "source"],
    "a hint": ["SELECT", "/*+ BROADCAST(source) */", "*", "FROM", "source"],
}
REFUSING = ("test_sql_query.py", "test_sql_stage.py", "test_cli_trust.py")  # their statements are refused on purpose
SEPARATORS = st.sampled_from([" ", "  ", "\n", "\t", " /* a comment; INSERT */ ", " -- a line comment; SET x\n",
                              "\n/* multi\nline */\n", " /* nested /* comment */ ; */ "])


@st.composite
def spelled(draw: st.DrawFn, lexemes: list[str]) -> str:
    """`lexemes` joined by any `SEPARATORS` (and around them), each word
    outside quotes in any letter case."""
    out = [draw(st.sampled_from(["", " ", "\n", "-- leading\n", "/* leading */"]))]
    for i, lexeme in enumerate(lexemes):
        if i:
            out.append(draw(SEPARATORS) if lexeme not in (",", ";", ")") else draw(st.sampled_from(["", " "])))
        quoted = lexeme[:1] in "'`" or lexeme.startswith("/*+")
        out.append(lexeme if quoted else "".join(c.upper() if draw(st.booleans()) else c.lower() for c in lexeme))
    out.append(draw(st.sampled_from(["", " ", "\n", " -- trailing", "\n/* trailing */"])))
    return "".join(out)


def refusal(sql: str, field: str = "transform.sql") -> ConfigError | None:
    try:
        check_query(field, sql)
    except ConfigError as err:
        return err
    return None


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_statement_that_is_not_one_query_is_refused_naming_the_field(name: str) -> None:
    err = refusal(" ".join(REFUSED[name]), "join.left_sql")
    assert err is not None and err.field == "join.left_sql", name
    assert str(err).count("\n") == 0


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_a_query_is_accepted(name: str) -> None:
    assert refusal(" ".join(ACCEPTED[name])) is None


@settings(max_examples=400, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(REFUSED)))
def test_a_refused_statement_stays_refused_whatever_its_spelling(data: st.DataObject, name: str) -> None:
    sql = data.draw(spelled(REFUSED[name]))
    assert refusal(sql) is not None, sql


@settings(max_examples=400, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(ACCEPTED)))
def test_an_accepted_query_stays_accepted_whatever_its_spelling(data: st.DataObject, name: str) -> None:
    sql = data.draw(spelled(ACCEPTED[name]))
    assert refusal(sql) is None, sql


@pytest.mark.parametrize(("sql", "problem"), [
    ("INSERT OVERWRITE DIRECTORY 'elsewhere' USING text SELECT 'w'", "not a statement starting with INSERT"),
    ("SET spark.sql.shuffle.partitions = 7", "not a statement starting with SET"),
    ("SELECT 1; SELECT 2", "got 2 statements"),
    ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "not a statement starting with INSERT"),
    ("CREATE TABLE t (x INT)", "not a statement starting with CREATE"),
    ("ADD JAR '/tmp/x.jar'", "not a statement starting with ADD JAR"),
    ("SELECT reflect('java.lang.Math', 'abs', -1)", "calls reflect(), which calls Java methods"),
    ("SELECT TRANSFORM(k) USING 'cat' AS (b) FROM source", "runs the program 'cat'"),
    ("-- nothing but a comment", "got none"),
])
def test_the_message_says_what_the_statement_is(sql: str, problem: str) -> None:
    err = refusal(sql)
    assert err is not None and problem in str(err), err
    assert str(err).startswith("transform.sql: ")


def test_what_sqlglot_cannot_tokenize_is_left_to_spark() -> None:
    # an unterminated string or comment: Spark's parser refuses it when the stage runs (wid.pipelines.read)
    assert refusal("INSERT INTO t SELECT 'unterminated") is None
    assert refusal("SELECT 1 /* unterminated") is None


def _example_queries() -> list[str]:
    found = []
    for path in sorted((ROOT / "examples").glob("*.toml")):
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        found += [doc.get("transform", {}).get("sql"), doc.get("join", {}).get("left_sql"),
                  doc.get("join", {}).get("right_sql")]
    return [q for q in found if q]


def _literal_queries() -> list[str]:
    """Every string literal of the tests and examples that starts as a
    query does (SELECT, WITH, in capitals), whichever database it is for (but
    the tests of refusals, whose statements are refused on purpose)."""
    found = []
    for path in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("examples/*.py")]:
        if path.name in REFUSING:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parts = {id(c) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for c in f.values}  # f-strings'
        found += [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in parts
                  and isinstance(node.value, str) and re.match(r"\s*(SELECT|WITH)\s", node.value)]
    return found


def test_every_query_of_the_examples_and_tests_is_accepted() -> None:
    queries = _example_queries() + _literal_queries()
    assert len(_example_queries()) >= 5 and len(queries) > 30
    assert [q for q in queries if refusal(q) is not None] == []


def test_a_join_side_names_its_field() -> None:
    j = WindowJoin(window=(-1, 1), metrics=(ColumnMetric("v"),), matching_column="k", time_column="t")
    with pytest.raises(ConfigError) as err:
        JoinStage(j, left="l", right="r", right_sql="SELECT 1; DROP TABLE t")
    assert err.value.field == "right_sql"


def test_the_stage_runs_the_query_inside_parentheses_on_lines_of_its_own() -> None:
    assert as_subquery("SELECT 1 -- the end") == f"SELECT * FROM (\nSELECT 1 -- the end\n) AS {ALIAS}"
    assert query_text("SELECT ';' ; -- the end") == "SELECT ';' "
    assert query_text("SELECT 1;\n") == "SELECT 1"
    assert query_text("SELECT 'unterminated;  ") == "SELECT 'unterminated"  # no tokens: a plain trailing ;
    assert query_text("SELECT 1 -- no ;") == "SELECT 1 -- no ;"
    one_line = "SELECT a FROM source WHERE 'b' = 'c' AND"
    assert spark_position("Syntax error at or near 'DIRECTORY'. SQLSTATE: 42601 (line 2, pos 17)", one_line) == \
        "Syntax error at or near 'DIRECTORY'. SQLSTATE: 42601 (line 1, pos 17)"
    assert spark_position("cannot be resolved. SQLSTATE: 42703; line 3 pos 7", "SELECT\n x\n FROM source") == \
        "cannot be resolved. SQLSTATE: 42703; line 2 pos 7"
    # the subquery's closing parenthesis, on the line after the query: the query ended too soon
    assert spark_position("Syntax error at or near ')'. SQLSTATE: 42601 (line 3, pos 0)", one_line) == \
        "Syntax error. SQLSTATE: 42601 (at the end of the query)"
