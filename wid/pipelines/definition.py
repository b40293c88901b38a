"""The definition a stream's checkpoint holds state for, recorded beside
Spark's files and compared on every restart.

Spark checks a restarted query's state against its schema only, and the
WID operator's state is Arrow blobs whose schema does not change with the
window: a checkpoint of 5-minute panes would resume as 10-minute ones
without a word. Flink refuses incompatible savepoint state through its
serializers' snapshots; Spark's guide lists which query changes a
checkpoint survives ("Recovery semantics after changes in a streaming
query"). wid records what its state depends on in
``<checkpoint>/wid-definition.json`` (`FILE`, `Checkpoint`) and, before a
stream starts, compares it with the pipeline about to run (`compare`):

- a change that keeps the state's meaning starts the stream with one
  notice naming it, and, where the change has one, its consequence
  (`Change.note`);
- a change that does not is refused before Spark starts, in one line
  naming each field with its old and new values and the fix
  (`DefinitionChanged`).

Every field of a window is classified in `WINDOW_FIELDS`: what a field
not listed there would do to the state is unknown, and it is refused (a
test checks that every field of `wid.spec.window.Window` and of every
kind's shape is listed). The
table in docs/how-to/changing-a-stream.md is this module's, in words.

A checkpoint written before definitions were recorded (Spark's commits,
no `FILE`) is of unknown definition: it starts with one warning naming the
risk, and the definition is recorded from then on. Refusing would stop
every stream at the upgrade, where its definition most likely did not
change; the warning says how to check.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from typing import Any

from wid.errors import ConfigError
from wid.pipelines.checkpoint import local_directory
from wid.spec.aggregation import Aggregation
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec, SinkSpec
from wid.spec.window import Punctuation

FILE = "wid-definition.json"
ALLOWED, REFUSED = "allowed", "refused"
NEW_CHECKPOINT = ("start from a new checkpoint ([stream] checkpoint = \"...\", the old one kept for the "
                  "windows it already wrote) and backfill the history with a batch run, or run the old definition")
_STATE = "the state was built under the old one"
_OUTPUT = "the target's columns change: write it to a new table"
# Every Window field: (verdict, why or the consequence)
WINDOW_FIELDS: dict[str, tuple[str, str]] = {
    **{name: (REFUSED, "the windows change: " + _STATE) for name in (
        "kind", "duration_ms", "hop_ms", "origin_ms", "gap_ms", "gap_column", "size_rows", "hop_rows", "every_rows",
        "landmark_ms", "max_duration_ms", "duration_months", "hop_months", "max_duration_months", "time_zone",
        "week_start", "rank_by")},
    **{name: (REFUSED, "the keys change: " + _STATE) for name in ("group_by", "partition_by", "order_by", "tie_breaker")},
    **{name: (REFUSED, "the event time changes: " + _STATE) for name in (
        "event_time_column", "event_time_unit", "time_mode")},
    "aggregations": (REFUSED, "the partial aggregates change: " + _STATE),
    "late_mode": (REFUSED, "which windows a late row counts in changes: " + _STATE),
    "allowed_lateness_ms": (REFUSED, "the state holds windows for the old budget"),
    "emit": (REFUSED, "the output's columns and the state's pending updates change"),
    "punctuation": (REFUSED, "the watermark's scopes change: " + _STATE),
    "crash_recovery": (REFUSED, "the state's recovery changes"),
    "late_data": (REFUSED, "a reopen budget changes what the state holds"),  # drop <-> dlq is allowed (`_late_data`)
    "lateness_ms": (ALLOWED, "the watermark never moves back: a larger lateness holds it until the data catches up"),
    "source_idleness_ms": (ALLOWED, ""),
    "max_future_ms": (ALLOWED, ""),
    "max_groups_per_window": (ALLOWED, ""),
    "on_state_cap": (ALLOWED, ""),
    **{name: (ALLOWED, _OUTPUT) for name in (
        "window_start_column", "window_end_column", "window_id_column", "window_label_column")},
}
_WHOLE = (Aggregation, Punctuation)  # compared whole, by value


@dataclass(frozen=True)
class Change:
    """One field whose value differs from the checkpoint's definition."""

    field: str
    old: Any
    new: Any
    verdict: str
    note: str = ""

    def __str__(self) -> str:
        return f"{self.field} {_shown(self.old)} -> {_shown(self.new)}" + (f" ({self.note})" if self.note else "")


class DefinitionChanged(ConfigError):
    """A stream restarted on a checkpoint whose state was built under a
    definition it cannot carry on from (`compare`). `changes` are the
    refused fields."""

    def __init__(self, checkpoint: str, changes: list[Change]) -> None:
        self.changes = changes
        what = "; ".join(_grouped(changes))
        super().__init__("stream.checkpoint", f"{checkpoint} holds state of another definition: {what}", NEW_CHECKPOINT)


def _grouped(changes: list[Change]) -> list[str]:
    """The changes as text, those of one note together: ``a 1 -> 2, b 3 -> 4 (note)``."""
    notes: dict[str, list[Change]] = {}
    for c in changes:
        notes.setdefault(c.note, []).append(c)
    return [", ".join(str(replace(c, note="")) for c in group) + (f" ({note})" if note else "")
            for note, group in notes.items()]


def _shown(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _plain(value: Any) -> Any:
    """`value` as JSON-ready data: dataclasses as tables of their compared
    fields, tuples as lists."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.compare}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _leaves(value: Any) -> dict[str, Any]:
    """A window's fields by name, nested shapes flattened (aggregations and
    punctuations kept whole): the names TOML and Python give them."""
    out: dict[str, Any] = {}
    for f in fields(value):
        if not f.compare:
            continue
        item = getattr(value, f.name)
        if is_dataclass(item) and not isinstance(item, _WHOLE):
            out.update(_leaves(item))
        else:
            out[f.name] = _plain(item)
    return out


def _sink(sink: SinkSpec) -> dict[str, Any]:
    """What names a sink's place (no credentials: a URL's password is not recorded)."""
    return {"kind": sink.kind, "path": sink.path, "table": sink.table, "topic": sink.topic, "url_env": sink.url_env}


def definition_of(spec: PipelineSpec | JoinPipelineSpec) -> dict[str, Any]:
    """The definition `FILE` records for `spec`: the window's fields (or the
    join stage, whole), the sources' names and places, the SQL stage, the
    sinks and the trigger, and the state layout of the operator that runs it."""
    from wid.kernels.operator.shard import LAYOUT

    sources = [{"name": s.name, "format": s.format, "path": s.path, "topic": s.topic, "topics": _plain(s.topics),
                "pattern": s.pattern} for s in spec.sources]
    stage = {"join": _plain(spec.join)} if isinstance(spec, JoinPipelineSpec) else {
        "kind": spec.window.kind, **_leaves(spec.window)}
    return {"window": stage, "sources": sources, "transform_sql": getattr(spec, "transform_sql", None),
            "target": _sink(spec.target), "dead_letter": _sink(spec.dead_letter), "trigger": spec.stream.trigger,
            "state_layout": LAYOUT}


def _defaults() -> dict[str, Any]:
    """Each window field's default, as recorded: a field a kind does not
    take is recorded by none of its windows (a definition recorded before
    kinds had their own shapes holds every kind's, at their defaults)."""
    from wid.spec.field_rules import default_of
    from wid.spec.kinds import KINDS
    from wid.spec.window import Window

    out: dict[str, Any] = {}
    classes: list[type[Any]] = [Window, *KINDS.values()]
    for cls in classes:
        for f in fields(cls):
            if f.compare and default_of(f) is not MISSING:
                out.setdefault(f.name, _plain(default_of(f)))
    return out


def _late_data(old: Any, new: Any) -> tuple[str, str]:
    if "reopen" not in (old, new):
        return ALLOWED, "late rows go to the new place from the change on"
    return WINDOW_FIELDS["late_data"]


def _window_change(name: str, old: Any, new: Any) -> Change:
    verdict, note = _late_data(old, new) if name == "late_data" else WINDOW_FIELDS.get(
        name, (REFUSED, "wid does not know what this field does to the state"))
    return Change(name, old, new, verdict, note)


def compare(old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """The changes from the recorded definition `old` to `new`
    (`definition_of`), each allowed or refused: a window field by
    `WINDOW_FIELDS`; a source's name or place, and the join stage, refused
    (the watermarks are kept per source and partition, the join's buffers
    by its definition); the SQL stage, the sinks and the trigger allowed;
    an older state layout allowed (the operator reads it), a newer one
    refused (this wid cannot read it)."""
    changes = []
    old_window, new_window = old.get("window", {}), new.get("window", {})
    defaults = _defaults()
    for name in sorted(set(old_window) | set(new_window)):
        before, after = (w.get(name, defaults.get(name)) for w in (old_window, new_window))
        if before != after:
            changes.append(_window_change(name, before, after))
    rules = {"sources": (REFUSED, "the watermarks are kept per source and partition"),
             "transform_sql": (ALLOWED, "the rows reaching the window change from the change on"),
             "target": (ALLOWED, "windows go to the new target from the change on"),
             "dead_letter": (ALLOWED, "dead letters go to the new place from the change on"),
             "trigger": (ALLOWED, "")}
    for name, (verdict, note) in rules.items():
        if old.get(name) != new.get(name):
            changes.append(Change(name, old.get(name), new.get(name), verdict, note))
    if old.get("state_layout", 1) != new["state_layout"]:
        newer = old.get("state_layout", 1) > new["state_layout"]
        changes.append(Change("state_layout", old.get("state_layout"), new["state_layout"],
                              REFUSED if newer else ALLOWED, "written by a newer wid" if newer else "read as written"))
    return changes


class Checkpoint:
    """Where a definition is kept: the directory ``<checkpoint>/FILE`` with
    one text file in it, read and written by Python on a local checkpoint
    (before Spark starts) and by Spark on any other file system (`spark`
    given: an ``s3a://`` or ``hdfs://`` checkpoint, after the session
    starts, through Spark Connect too). Both read what either wrote."""

    def __init__(self, checkpoint: str, spark: Any = None) -> None:
        self.checkpoint, self.spark = checkpoint, spark
        self.root = None if spark is not None else local_directory(checkpoint)
        self.uri = checkpoint.rstrip("/") + "/" + FILE

    def committed(self) -> bool:
        """Whether Spark committed a micro-batch in this checkpoint."""
        if self.root is not None:
            commits = self.root / "commits"
            return commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir())
        found = self._spark_read("binaryFile", self.checkpoint.rstrip("/") + "/commits")
        return found is not None and found.where("path RLIKE '/[0-9]+$'").limit(1).count() > 0

    def read(self) -> dict[str, Any] | None:
        """The recorded document, or None."""
        if self.root is not None:
            parts = sorted((self.root / FILE).glob("part-*")) if (self.root / FILE).is_dir() else []
            return json.loads(parts[0].read_text(encoding="utf-8")) if parts else None
        found = self._spark_read("text", self.uri, wholetext=True)
        rows = found.collect() if found is not None else []
        return json.loads(rows[0][0]) if rows else None

    def write(self, doc: dict[str, Any]) -> None:
        """Record `doc`, replacing what was recorded."""
        text = json.dumps(doc, indent=2, sort_keys=True, default=str)
        if self.root is None:
            self.spark.createDataFrame([(text,)], "value STRING").coalesce(1).write.mode("overwrite").text(self.uri)
            return
        folder = self.root / FILE
        temp = self.root / f".{FILE}.tmp"
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir(parents=True)
        (temp / "part-00000.txt").write_text(text, encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        temp.rename(folder)

    def _spark_read(self, fmt: str, path: str, **options: Any) -> Any:
        """Spark's reader over `path`, or None where nothing is there yet."""
        try:
            found = self.spark.read.format(fmt).options(**options).load(path)
            found.schema  # noqa: B018 - a missing path fails here, as Spark resolves the relation
            return found
        except Exception as err:  # noqa: BLE001 - nothing written there yet is the only expected failure
            if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
                return None
            raise


def check(spec: PipelineSpec | JoinPipelineSpec, checkpoint: str, spark: Any = None) -> list[str]:
    """Compare `spec` with the definition its `checkpoint` records, record
    `spec`'s, and return the notices to print (allowed changes, or a
    checkpoint of unknown definition). Without `spark` only a local
    checkpoint is read (before Spark starts; elsewhere nothing is done and
    the caller checks again with `spark`). Nothing is compared before a
    micro-batch was committed. Raises DefinitionChanged, before anything is
    written, when a change is refused."""
    place = Checkpoint(checkpoint, spark)
    if place.root is None and spark is None:
        return []
    new = definition_of(spec)
    notices = []
    if place.committed():
        recorded = place.read()
        if recorded is None:
            notices.append(f"{checkpoint} was written before wid recorded a stream's definition: wid cannot tell "
                           "whether its state was built by this pipeline's window, and records it from now on "
                           "(a changed window, keys or aggregations would resume on the old state)")
        else:
            changes = compare(recorded["definition"], new)
            refused = [c for c in changes if c.verdict == REFUSED]
            if refused:
                raise DefinitionChanged(checkpoint, refused)
            if changes:
                notices.append("the pipeline changed since its checkpoint's last run: " + "; ".join(_grouped(changes)))
    place.write({"definition": new})
    return notices


def remote(checkpoint: str) -> bool:
    """Whether `checkpoint` is on a file system only Spark reads (`check` with a session)."""
    return local_directory(checkpoint) is None


__all__ = ["ALLOWED", "FILE", "REFUSED", "WINDOW_FIELDS", "Change", "Checkpoint", "DefinitionChanged", "check",
           "compare", "definition_of", "remote"]
