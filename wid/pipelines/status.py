"""``wid status``: what a stream's checkpoint says, without running the
stream and while it runs (read only).

- the micro-batches Spark logged and committed (its offset and commit
  logs), and wid's history of each (`wid.pipelines.history`): accounting,
  watermarks, durations;
- the watermark of every source and Kafka partition, when each last
  received a row, which are idle, and which one holds the global
  watermark back (the non-idle clock at the minimum): the answer to "why is
  this window not out yet";
- the windows the state holds (`wid.kernels.operator.held`): how many, the
  oldest, the groups per window, largest first; and the state's bytes per
  shard.

The operator's state is read through Spark's state data source
(``spark.read.format("statestore")``, Spark 4.0 and later; its values are
Arrow blobs only wid's engines decode, which they do here, with the same
code the shards run), so a Spark session is needed, classic or Spark
Connect. The logs and the history are read from a local checkpoint.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from wid.kernels.fields import END, START
from wid.kernels.operator.engines import make_engine
from wid.kernels.operator.held import GROUPS
from wid.kernels.operator.held import SCHEMA as NONE_HELD
from wid.kernels.operator.shard import MemoryStore, Meta
from wid.pipelines import definition, history
from wid.pipelines.checkpoint import local_directory
from wid.spec.pipeline import JoinPipelineSpec, PipelineSpec

US = 1_000_000


@dataclass(frozen=True)
class Clock:
    """One watermark clock: a source, or a Kafka partition of one (`topic`,
    `partition`), its watermark (epoch µs), when a row last arrived on it
    (the micro-batch's timestamp, epoch ms), whether it is idle at the last
    micro-batch, and whether it holds the global watermark back."""

    name: str
    source: str
    topic: str | None
    partition: int | None
    watermark_us: int | None
    last_arrival_ms: int | None
    idle: bool
    holds_back: bool = False


@dataclass
class Status:
    """A stream's status (module docstring); times in epoch µs or ms as named."""

    checkpoint: str
    committed: int | None = None  # the last micro-batch Spark committed
    logged: int | None = None  # the last one it logged (logged past committed: one is running, or was cut)
    last_batch_ms: int | None = None  # the last logged micro-batch's timestamp
    recorded: dict[str, Any] | None = None  # the definition the checkpoint records
    global_watermark_us: int | None = None
    clocks: list[Clock] = field(default_factory=list)
    windows: pa.Table = field(default_factory=NONE_HELD.empty_table)  # every window held, summed over shards
    shard_bytes: dict[str, int] = field(default_factory=dict)
    history: list[history.Entry] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def holding_back(self) -> Clock | None:
        """The clock that holds the global watermark back, if one does."""
        return next((c for c in self.clocks if c.holds_back), None)

    def quiet_for_s(self, clock: Clock) -> int | None:
        """How long, in seconds of micro-batch time, `clock` has received no row."""
        if self.last_batch_ms is None or clock.last_arrival_ms is None:
            return None
        return max(0, self.last_batch_ms - clock.last_arrival_ms) // 1000

    def why_waiting(self, limit: int = 1) -> list[str]:
        """For the `limit` oldest windows held: why each is not out yet."""
        out = []
        clock = self.holding_back
        for row in self.windows.sort_by([(START, "ascending")]).slice(0, limit).to_pylist():
            end = row[END]
            if end is None:
                out.append(f"window from {_iso(row[START])} has no end yet (its extent is in progress)")
                continue
            wait = f"window [{_iso(row[START])}, {_iso(end)}) waits for the watermark ({_iso(self.global_watermark_us)})"
            held = f" to pass its end; {_clock_text(clock)} holds the watermark back" if clock else " to pass its end"
            out.append(wait + held)
        return out

    def to_json(self) -> dict[str, Any]:
        """The status as JSON-ready data (``wid status --json``)."""
        windows = self.windows.sort_by([(GROUPS, "descending"), (START, "ascending")]).to_pylist()
        return {"checkpoint": self.checkpoint, "committed": self.committed, "logged": self.logged,
                "last_batch_ms": self.last_batch_ms, "global_watermark_us": self.global_watermark_us,
                "clocks": [{**c.__dict__, "quiet_for_s": self.quiet_for_s(c)} for c in self.clocks],
                "windows": {"count": self.windows.num_rows, "oldest_start_us": _oldest(self.windows),
                            "held": [{"start_us": w[START], "end_us": w[END], "groups": w[GROUPS]} for w in windows]},
                "shard_bytes": self.shard_bytes, "why": self.why_waiting(3), "definition": self.recorded,
                "history": [e.__dict__ for e in self.history], "notes": self.notes}


def _oldest(windows: pa.Table) -> int | None:
    return None if windows.num_rows == 0 else int(pa.compute.min(windows.column(START)).as_py())


def _iso(us: int | None) -> str:
    from wid.semantics.timeunits import format_us

    return "none yet" if us is None else format_us(us)


def _clock_text(clock: Clock) -> str:
    where = f"partition {clock.partition} of topic {clock.topic}" if clock.partition is not None else \
        f"source {clock.source}"
    return f"{where} (its watermark {_iso(clock.watermark_us)})"


def _log_ids(root: Path, name: str) -> list[int]:
    folder = root / name
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


def read_logs(status: Status) -> None:
    """Fill the logged and committed micro-batches, the last one's
    timestamp, the recorded definition, the history and the state's bytes
    per shard from a local checkpoint (another file system: a note)."""
    root = local_directory(status.checkpoint)
    if root is None:
        status.notes.append(f"{status.checkpoint}: not a local directory, so its logs and history are not read")
        return
    if not root.is_dir():
        status.notes.append(f"no checkpoint at {root} yet: the stream has not run")
        return
    logged, committed = _log_ids(root, "offsets"), _log_ids(root, "commits")
    status.logged = logged[-1] if logged else None
    status.committed = committed[-1] if committed else None
    if logged:
        lines = (root / "offsets" / str(logged[-1])).read_text(encoding="utf-8").splitlines()
        status.last_batch_ms = int(json.loads(lines[1])["batchTimestampMs"])
    status.recorded = (definition.Checkpoint(status.checkpoint).read() or {}).get("definition")
    status.history = history.read(status.checkpoint)
    state = root / "state" / "0"
    if state.is_dir():
        status.shard_bytes = {p.name: sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
                              for p in sorted(state.iterdir()) if p.name.isdigit()}


def _stores(spark: Any, checkpoint: str) -> dict[int, MemoryStore]:
    """Each shard's state, read through Spark's state data source, as a store."""
    stores: dict[int, MemoryStore] = {}
    reader = spark.read.format("statestore")
    for var, key in (("values", "name"), ("panes", "pane")):
        rows = reader.option("stateVarName", var).load(checkpoint).selectExpr(
            "key.wid_key AS shard", f"user_map_key.{key} AS k", "user_map_value.blob AS blob").toArrow()
        for shard, k, blob in zip(*(rows.column(c).to_pylist() for c in ("shard", "k", "blob")), strict=True):
            store = stores.setdefault(int(shard), MemoryStore())
            (store.values.__setitem__ if var == "values" else store.panes.__setitem__)(k, bytes(blob))
    return stores


def _topic_of(crc: int, topics: Iterable[str]) -> str:
    return next((t for t in topics if zlib.crc32(t.encode()) == crc), f"{crc:08x}")


def clocks_of(meta: Meta, batch_ms: int | None, idleness_ms: int | None, topics: Iterable[str]) -> list[Clock]:
    """`meta`'s clocks as `Clock`s, the one holding the global watermark
    back marked (the non-idle clock at the minimum watermark, when there are
    several clocks)."""
    topics = list(topics)
    out = []
    for name, c in sorted(meta.marks.sources.items()):
        source, _, rest = name.partition("[")
        topic = partition = None
        if rest:
            crc, number = rest.rstrip("]").split(":")
            topic, partition = _topic_of(int(crc, 16), topics), int(number)
        idle = batch_ms is not None and c.idle(batch_ms, idleness_ms)
        out.append(Clock(name, source, topic, partition, c.watermark_us, c.last_arrival_ms, idle))
    live = [c for c in out if not c.idle and c.watermark_us is not None]
    if len(out) > 1 and live:
        least = min(live, key=lambda c: c.watermark_us or 0)
        out = [c if c is not least else Clock(**{**c.__dict__, "holds_back": True}) for c in out]
    return out


def read_state(status: Status, spark: Any, operator: Any, idleness_ms: int | None, topics: Iterable[str]) -> None:
    """Fill the clocks, the global watermark and the windows held from the
    checkpoint's state (`operator`: the window's OperatorSpec, from its
    pipeline; None: the clocks only)."""
    root = local_directory(status.checkpoint)
    if root is not None and not (root / "state").is_dir():
        stores: dict[int, MemoryStore] = {}  # no micro-batch has committed state (Spark's reader refuses it)
    else:
        stores = _stores(spark, status.checkpoint)
    if not stores:
        status.notes.append("the checkpoint holds no state yet")
        return
    metas = {s: Meta.loads(store.values.get("meta")) for s, store in stores.items()}
    latest = max(metas.values(), key=lambda m: m.batches)  # every shard advances the same watermarks
    status.global_watermark_us = latest.marks.global_us
    status.clocks = clocks_of(latest, status.last_batch_ms, idleness_ms, topics)
    if operator is None:
        status.notes.append("give the pipeline file to list the windows its state holds")
        return
    held = [make_engine(operator, store).open_windows(status.global_watermark_us) for store in stores.values()]
    both = pa.concat_tables(held) if held else NONE_HELD.empty_table()
    summed = both.group_by([START, END], use_threads=False).aggregate([(GROUPS, "sum")])
    status.windows = summed.rename_columns([START, END, GROUPS]).cast(NONE_HELD)


def status_of(spark: Any, checkpoint: str, spec: PipelineSpec | JoinPipelineSpec | None = None) -> Status:
    """The `Status` of `checkpoint`; with its pipeline `spec` (a window's),
    the windows its state holds, by the window's own engine."""
    from wid.pipelines.read import compile_pipeline

    status = Status(checkpoint)
    read_logs(status)
    operator = idleness = None
    topics: list[str] = []
    if isinstance(spec, PipelineSpec):
        compiled = compile_pipeline(spark, spec)  # builds the plan only: no query starts
        operator = compiled.stream.operator if compiled.stream is not None else None
        idleness = spec.window.source_idleness_ms
        topics = [t for s in spec.sources for t in ((s.topic,) if s.topic else s.topics)]
    read_state(status, spark, operator, idleness, topics)
    return status


__all__ = ["Clock", "Status", "clocks_of", "read_logs", "read_state", "status_of"]
