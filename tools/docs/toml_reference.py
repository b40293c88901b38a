"""The TOML reference page, generated from the spec dataclasses.

Every key of every table comes from `dataclasses.fields` of the class that
table builds (`wid.spec.toml_io` builds each table with those fields, renamed
where TOML needs it), so a field added to a spec appears here at the next
build. Descriptions come from the class docstring's bullets (``- `name`:
...``) or, where a class describes its fields in prose, from `NOTES` below; a
field with neither still appears, with its type and default. Which keys the
loader accepts beyond the fields (say a Spark duration string under ``hop``
for ``hop_ms``) is asked of `wid.spec.toml_io.loads_pipeline` itself
(`accepted`), not assumed.

    python -m tools.docs.toml_reference      # prints the page
"""

from __future__ import annotations

import re
import typing
from dataclasses import MISSING, Field, dataclass, fields
from typing import Any

import tomli_w

from wid.errors import ConfigError
from wid.spec.aggregation import Aggregation
from wid.spec.catalog import AGGREGATIONS
from wid.spec.join import ColumnMetric, JoinStage, WindowJoin
from wid.spec.kinds import KINDS, kind_fields, kinds_taking
from wid.spec.pipeline import SinkSpec, SourceSpec, StreamSpec
from wid.spec.spark_table import SPARK_KEYS
from wid.spec.toml_io import loads_pipeline
from wid.spec.window import Punctuation, Window

# Descriptions for fields their class's docstring describes in prose rather than per field.
NOTES: dict[type, dict[str, str]] = {
    Window: {
        "kind": "The window kind: how rows map to extents ([Windows and extents](../concepts/windows.md)); the "
                "tag of the kind's shape (`wid.spec.kinds`), whose parameters follow it.",
        "shape": "Python only: the kind's parameters as one value, `TumblingWindows(duration=\"5 minutes\")` "
                 "(`wid.spec.kinds`), instead of `kind` and the kind's parameters.",
        "aggregations": "The aggregates, in output order: `Aggregation(agg, column, as_=...)` in Python, "
                        "`[[transform.window.aggregations]]` tables in TOML ([Aggregations](toml.md#aggregations)).",
        "max_future_ms": "A row whose event time lies more than this ahead of its micro-batch's processing time is "
                         "rejected (\"event time in the future\") and moves no watermark; one day by default. None "
                         "(TOML: `max_future = \"off\"`) turns the guard off.",
        "event_time_column": "The column holding each row's event time. Required with `time_mode = \"event\"`; "
                             "a Kafka source defaults it to the message timestamp `_event_ts`.",
        "event_time_unit": "How the event-time column is read: `timestamp` (a Spark TIMESTAMP, TIMESTAMP_NTZ or a "
                           "string Spark parses), or epoch `ms` or `us` integers.",
        "time_mode": "`event` windows on the event-time column; `processing` stamps each row with its arrival time.",
        "group_by": "Group columns: one output row per window and group.",
        "lateness_ms": "How far the watermark trails the largest event time seen: `watermark = max(ts) - "
                       "lateness_ms`.",
        "source_idleness_ms": "A source without rows for this long (micro-batch time) stops holding the "
                              "watermark back.",
        "late_data": "What happens to a late row: `drop` (counted), `dlq` (to the dead letter with a reason) or "
                     "`reopen` (the window is corrected and emitted again, within `allowed_lateness_ms`).",
        "allowed_lateness_ms": "With `late_data = \"reopen\"`: how long after its end a window still takes late "
                               "rows.",
        "late_mode": "For a row late for some of its windows only (hopping, landmark): `generous` counts it in the "
                     "others, `consistent` drops it from all.",
        "emit": "`on_close` emits each window once, when it closes; `on_update` also emits partial values, "
                "with `is_final = false`.",
        "max_groups_per_window": "The most groups one window may hold; a stream fails rather than grow past it. "
                                 "Required on a stream.",
        "on_state_cap": "What hitting a state cap does: `fail` (the micro-batch fails, naming the cap).",
        "crash_recovery": "`checkpoint`: Spark's checkpoint plus sinks keyed by the natural key (exactly-once "
                          "results); `none`.",
        "punctuation": "Punctuation rows: a table with `predicate`, `scope`, `time_column` (below).",
        "window_start_column": "The name of the output's window-start column.",
        "window_end_column": "The name of the output's window-end column.",
        "window_id_column": "The name of a count window's id column.",
    },
    SinkSpec: {
        "kind": "`sqlite`, `postgres`, `parquet`, `console`, `kafka`, `delta` or `iceberg` "
                "([Sinks](#sinks-target-and-dead_letter)).",
        "path": "The SQLite file, the Parquet directory, the Delta table's directory or URI, or the Iceberg "
                "warehouse. A relative path resolves against the TOML file's directory.",
        "table": "The table (SQLite, PostgreSQL; for Iceberg `name` or `namespace.name`).",
        "url": "PostgreSQL: a libpq URI or key=value string. A password in it is shown as `***` everywhere.",
        "url_env": "PostgreSQL: the environment variable holding `url`, read when the pipeline runs.",
        "password_env": "PostgreSQL: the environment variable holding the password.",
        "mode": "Parquet: `append` (a rerun duplicates rows; wid warns) or `overwrite`.",
        "rows": "Console: how many rows to print.",
        "retries": "Database sinks: how many times a transient error is retried.",
        "retry_backoff_ms": "Database sinks: the first wait between retries, doubled each time (at most 30 s).",
        "options": "Writer options: Kafka producer settings (`kafka.*`), Delta or Iceberg table properties.",
        "topic": "Kafka: the topic written.",
        "bootstrap_servers": "Kafka: the brokers, `host:port[,host:port]`.",
        "delivery": "Kafka: `at-least-once` (Spark's Kafka writer) or `exactly-once` (Kafka transactions: a "
                    "`read_committed` consumer sees each message once; [Kafka](../how-to/kafka.md#exactly-once-delivery)).",
    },
    ColumnMetric: {
        "column": "A right column: its value for each matching right row (the window (0, 0): an array of them).",
        "as_": "The output column (default: the column's name).",
    },
    SourceSpec: {
        "object": "With `format = \"python\"`: `module:attribute` naming a pandas DataFrame, a pyarrow Table, or "
                  "a callable returning one; the module is imported from the TOML file's directory.",
        "topic": "Kafka: the topic to read (or `topics`, or `pattern`).",
        "topics": "Kafka: several topics to read.",
        "pattern": "Kafka: a Java regex of topics to read.",
        "bootstrap_servers": "Kafka: the brokers, `host:port[,host:port]`.",
    },
}

# Each table of a pipeline file: its header, what it is, the class it builds, and how to place a key
# in a minimal pipeline to ask the loader whether it accepts it (`accepted`).
_BASE: dict[str, Any] = {
    "name": "probe",
    "source": {"format": "python", "object": "module:rows"},
    "transform": {"window": {"kind": "tumbling", "duration_ms": 1000, "event_time_column": "ts",
                             "aggregations": [{"agg": "count", "as": "n"}]}},
}


@dataclass(frozen=True)
class Table:
    header: str
    anchor: str
    intro: str
    cls: type
    place: tuple[str, ...]  # where the table sits in `_BASE` (for `accepted`); () when not probed
    skip: tuple[str, ...] = ()  # fields written as their own tables


TABLES = (
    Table("[source]", "source", "Where rows come from. Several sources are several `[[source]]` tables, each "
          "with its own `name`.", SourceSpec, ("source",)),
    Table("[transform]", "transform", "The window stage. `sql` is an optional Spark SQL pre-stage reading "
          "`FROM source` (each source by its `name`); `[transform.window]` is the window.", type(None), ()),
    Table("[transform.window]", "transformwindow", "The window: its kind, extent, groups, completeness and "
          "late-data policy: `kind`, the kind's parameters (each kind's shape, `wid.spec.kinds`), then what "
          "every kind shares. A key a kind does not use is refused.", Window, ("transform", "window"),
          ("aggregations", "punctuation", "shape")),
    Table("[[transform.window.aggregations]]", "transformwindowaggregations", "One table per output "
          "aggregate, in output order.", Aggregation, ()),
    Table("[transform.window.punctuation]", "transformwindowpunctuation", "Optional: which rows are "
          "punctuations ([Punctuations](../concepts/punctuations.md)).", Punctuation, ()),
    Table("[join]", "join", "A window join instead of `[transform]`: the stage keys and the `WindowJoin` "
          "fields in one table ([Window join](../semantics.md#window-join)).", JoinStage, (), ("join",)),
    Table("[join] (window join fields)", "join-window-join-fields", "", WindowJoin, (), ("metrics",)),
    Table("[[join.metrics]]", "joinmetrics", "An aggregate metric (the keys of "
          "`[[transform.window.aggregations]]`), or, without `agg`, a right column's value:", ColumnMetric, ()),
    Table("[target] and [dead_letter]", "sinks-target-and-dead_letter", "Where windows and rejected or late "
          "rows go. Without them, both go to `<name>.sqlite` beside the file.", SinkSpec, ("target",)),
    Table("[stream]", "stream", "How a streaming pipeline runs (ignored in batch).", StreamSpec, ("stream",)),
)


def bullets(doc: str | None) -> dict[str, str]:
    """Field descriptions from a docstring's bullets: ``- `a`: text`` (also
    ``- `a`, `b`: text`` and ``- `as_` [`as`]: text``), continuation lines
    included."""
    out: dict[str, str] = {}
    names: list[str] = []
    text: list[str] = []

    def flush() -> None:
        for n in names:
            out.setdefault(n, " ".join(text).strip())

    for line in (doc or "").splitlines():
        stripped = line.strip()
        m = re.match(r"- (`[^`]+`[^:]*?):\s*(.*)$", stripped)
        if m and not m.group(1).startswith("``"):
            flush()
            names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", m.group(1))
            text = [m.group(2)]
        elif stripped.startswith("- ") or not stripped:
            flush()
            names, text = [], []
        elif names:
            text.append(stripped)
    flush()
    return {k: _markdown(v) for k, v in out.items()}


def _markdown(text: str) -> str:
    """Docstring text as Markdown: RST's double backticks become single ones
    (kept double around a literal that holds a backtick), first letter up."""
    text = re.sub(r"``(.+?)``(?!`)", lambda m: f"`` {m.group(1)} ``" if "`" in m.group(1) else f"`{m.group(1)}`", text)
    text = text.replace("|", "\\|")
    return text[:1].upper() + text[1:]


def toml_key(cls: type, name: str) -> str:
    return "as" if name == "as_" else name


def type_name(f: Field[Any], owner: type) -> str:
    """A field's type in TOML words."""
    hint = typing.get_type_hints(owner).get(f.name, f.type)
    return _words(hint)


def _words(hint: Any) -> str:
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' for a in typing.get_args(hint))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_words(a) for a in args)
    if origin is tuple:
        return "array of " + (_words(args[0]) + "s" if args and args[-1] is not Ellipsis or len(args) == 2 else "values")
    if origin is dict:
        return "table"
    if hint is Any:
        return "string or array"
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if hint in simple:
        return simple[hint]
    if isinstance(hint, type):
        return f"table ({hint.__name__})"
    return "any"


def default_text(f: Field[Any]) -> str:
    if f.default is not MISSING:
        value = f.default
    elif f.default_factory is not MISSING:
        value = f.default_factory()
    else:
        return "**required**"
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        value = list(value)
    if value == {}:
        return "`{}`"
    return f"`{tomli_w.dumps({'x': value}).strip()[4:]}`"


def accepted(table: Table, key: str) -> bool:
    """Whether the loader accepts `key` in `table`: it is, unless loading a
    minimal pipeline with that key set fails with "unknown key" on it."""
    if not table.place:
        return False
    doc: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in _BASE.items()}
    node = doc
    for part in table.place[:-1]:
        node[part] = dict(node.get(part, {}))
        node = node[part]
    leaf = dict(node.get(table.place[-1], {"kind": "console"} if table.place == ("target",) else {}))
    leaf[key] = "1 second"
    node[table.place[-1]] = leaf
    try:
        loads_pipeline(tomli_w.dumps(doc))
    except ConfigError as err:
        return not (err.field == ".".join((*table.place, key)) and err.problem == "unknown key")
    return True


def _kinds_note(name: str) -> str:
    kinds = kinds_taking(name)
    required = [k for k, kind in KINDS.items() if name in kind.required]
    parts = []
    if kinds:
        parts.append("Kinds: " + ", ".join(kinds) + ".")
    if required:
        parts.append("Required by " + ", ".join(required) + ".")
    return " ".join(parts)


def _alias_note(name: str, names: set[str]) -> str:
    """What a field without a description says, when it is the unit-less
    twin of a ``*_ms`` field (a Spark duration string such as ``"1 hour"``)."""
    if f"{name}_ms" in names:
        return (f"`{name}_ms` as a Spark duration string (`\"1 hour\"`, `\"30 seconds\"`); give one of "
                f"`{name}` and `{name}_ms`, not both.")
    return ""


def rows(table: Table) -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) for every key of `table`."""
    if table.cls is type(None):
        return [("sql", "string", "unset", "One Spark SQL query run before the window, reading each source by "
                 "its name (`FROM source`); a statement that is not one query is refused "
                 "([trust model](../trust.md)). Use `try_` functions (`try_to_timestamp`, `try_cast`): a value they cannot "
                 "convert becomes NULL, and a row with a NULL event time or key goes to the dead letter.")]
    docs = {**bullets(table.cls.__doc__), **NOTES.get(table.cls, {})}
    out = []
    if table.cls is Window:  # the kind, then every kind's parameters (from its shape), then the common fields
        out.append(("kind", "string", "**required**", f"{docs['kind']} One of {', '.join(KINDS)}."))
        for name in kind_fields():
            owner = KINDS[kinds_taking(name)[0]]
            f = next(f for f in fields(owner) if f.name == name)
            out += _field_rows(table, f, owner, owner.descriptions.get(name, ""), _kinds_note(name))
    names = {f.name for f in fields(table.cls)}
    for f in fields(table.cls):
        if f.init and f.compare and f.name not in table.skip:
            out += _field_rows(table, f, table.cls, docs.get(f.name, "") or _alias_note(f.name, names), "")
    return out


def _field_rows(table: Table, f: Field[Any], owner: type, doc: str, note: str) -> list[tuple[str, str, str, str]]:
    """The row of field `f` of `owner`, and of its text form where the loader takes one."""
    key = toml_key(owner, f.name)
    out = [(key, type_name(f, owner), default_text(f), " ".join(p for p in (doc, note) if p))]
    if key.endswith("_ms") and key[:-3] not in {g.name for g in fields(owner)} and accepted(table, key[:-3]):
        out.append((key[:-3], "string", "unset", f"`{key}` as a Spark duration string (`\"1 hour\"`, "
                    f"`\"30 seconds\"`); give one of `{key[:-3]}` and `{key}`, not both."))
    return out


def page() -> str:
    """The whole reference page, as Markdown."""
    lines = [
        "# TOML reference",
        "",
        "Every key a pipeline file may hold, table by table. This page is generated from the spec "
        "dataclasses (`wid.spec`) each time the site is built (`tools/docs/toml_reference.py`), so it lists "
        "exactly the keys the loader accepts. An unknown key is refused with the closest known one. "
        "`wid validate FILE` checks a file without starting Spark.",
        "",
        "Time values are integers in milliseconds unless the key says otherwise. Names (tables, group "
        "columns, aliases) are identifiers: letters, digits and `_`, not starting with a digit, at most "
        "63 bytes.",
        "",
        "## Top level",
        "",
        "| key | type | default | description |",
        "|---|---|---|---|",
        "| `name` | string | **required** | The pipeline's name: letters, digits, `-` and `_`. Names the default "
        "SQLite file, checkpoint and dead letters. |",
        "",
    ]
    for table in TABLES:
        lines += [f"## `{table.header}` {{#{table.anchor}}}", ""]
        if table.intro:
            lines += [table.intro, ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        lines += [f"| `{k}` | {t} | {d} | {desc} |" for k, t, d, desc in rows(table)]
        lines.append("")
    lines += ["## `[spark]` {#spark}", "",
              "Where Spark runs and its settings. A master or Spark Connect server chosen outside wid "
              "(`spark-submit`, `SPARK_REMOTE`, a running session) takes precedence.", "",
              "| key | type | description |", "|---|---|---|"]
    spark_notes = {"master": "A Spark master: `local[*]` (the default), `spark://host:7077`, `yarn`...",
                   "remote": "A Spark Connect server, `sc://host:15002`; not with `master`.",
                   "conf": "A table of Spark settings, e.g. `{ \"spark.sql.shuffle.partitions\" = \"8\" }`."}
    lines += [f"| `{k}` | {'table' if k == 'conf' else 'string'} | {spark_notes.get(k, '')} |" for k in SPARK_KEYS]
    lines += ["", "## Aggregations {#aggregations}", "",
              "The values of `agg`, from `wid.spec.catalog.AGGREGATIONS`.", "",
              "| `agg` | columns | meaning |", "|---|---|---|"]
    for name, shape in AGGREGATIONS.items():
        cols = " or ".join(str(c) for c in shape.columns)
        extra = "; takes `percent`" if shape.percent else ""
        lines.append(f"| `{name}` | {cols} | {shape.origin}{extra} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(page())
