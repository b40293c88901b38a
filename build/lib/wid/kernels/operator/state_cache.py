"""A host-local copy of what a shard's micro-batch left in the state store,
so that the next micro-batch reads it back without PySpark's state API.

PySpark's ``transformWithStateInPandas`` moves every state value between
the Python worker and the JVM through a socket, pickled on both sides: a
2 MB value took 40-60 ms to read back (the rolling benchmark's bins, four
shards, every micro-batch), whatever Python does
with it. The state store stays the only truth (it is what checkpoints and
restarts read); this cache only saves the trip back:

- At the end of a micro-batch the shard writes every value it read,
  wrote or deleted, and those the previous file held that it did not touch
  (they are unchanged), to one Arrow IPC file named by a fresh random token,
  then puts the token into the state store (`TOKEN`) with the rest of the
  state, in the same commit.
- At the start of the next one it reads the token from the state store.
  If the file of that token is on this host, it holds exactly the values
  the committed state holds under those names (a token is written once,
  with the state it describes, and never reused); names the file does not
  list are read from the state store. A retried or speculative task, a
  restart from an older checkpoint or a shard moved to another host finds
  another token or no file, and reads the state store as before.

The files live in a directory of the operator plan (a fresh id for each
compiled plan) under the Spark application's directory on the executor
(`SparkFiles`). Each new file replaces the shard's previous one on the same
host; each shard reports its directory with its counts, and when a
pipeline's query ends its runner removes every directory reported
(`drop`, run as a small Spark job until each is gone:
`wid.spark.operator.cache_files`). What a killed driver left goes with the
application (at exit in local mode and on YARN; on a standalone worker, by
``spark.worker.cleanup``).
Runs on executors: pyarrow and the standard library.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

from wid.kernels.operator.shard import Store

TOKEN = "_wid_cache_token"  # the name of the token in the state store
CACHE_DIR = "wid-state-cache"
SCHEMA = pa.schema([("key", pa.string()), ("blob", pa.binary())])  # blob NULL: deleted


def cache_root(work_dir: str | None, cache_id: str) -> Path | None:
    """The cache directory of one operator plan (`cache_id`, fresh for each
    plan) under an executor's work directory (None: not on an executor, so
    nothing is cached)."""
    return Path(work_dir) / CACHE_DIR / cache_id if work_dir else None


def drop(directories: list[str]) -> list[str]:
    """Remove those of `directories` (cache directories, `cache_root`) that
    are on this host; returns the ones removed."""
    removed = []
    for directory in directories:
        path = Path(directory)
        if path.parent.name == CACHE_DIR and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(directory)
    return removed


def dropping(batches: Iterator[pa.RecordBatch], cache_id: str, directories: list[str],
             work_dir: Callable[[], str | None]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` form of `drop`: removes plan `cache_id`'s directory in
    this executor's `work_dir()` (reported or not: a micro-batch that failed
    reported nothing) and those of `directories` on this host; one column
    ``removed`` (string), the directories removed (input rows are ignored)."""
    for _ in batches:
        pass
    own = cache_root(work_dir(), cache_id)
    removed = drop([*directories, *([str(own)] if own is not None else [])])
    yield pa.record_batch([pa.array(removed, pa.string())], names=["removed"])


def uncached(store: Store) -> Store:
    """`store` for a micro-batch that keeps no host-local copy: its token
    is deleted first, so that no file written before (this query, run
    earlier in the same application with the copy on) can stand for the
    state this micro-batch changes."""
    store.delete(TOKEN)
    return store


class CachedStore:
    """A `wid.kernels.operator.shard.Store` over `inner` (the state store)
    that reads what the previous micro-batch left from the host-local file
    of the token `inner` holds, if there is one under `root`. Call
    `finish` once the micro-batch's state is written."""

    def __init__(self, inner: Store, root: Path) -> None:
        self.inner, self.root = inner, root
        token = inner.get(TOKEN)
        self.old = token.decode() if token else None
        self.known = self._load(self.old) if self.old else {}
        self.seen: dict[str, bytes | None] = {}

    def _load(self, token: str) -> dict[str, bytes | None]:
        try:
            with pa.memory_map(str(self.root / token)) as source:
                table = pa.ipc.open_file(source).read_all()
        except (OSError, pa.ArrowInvalid):
            return {}  # not on this host (or unreadable): the state store answers
        return dict(zip(table.column("key").to_pylist(), table.column("blob").to_pylist(), strict=True))

    def _get(self, key: str, read: Callable[[], bytes | None]) -> bytes | None:
        if key not in self.seen:
            self.seen[key] = self.known[key] if key in self.known else read()
        return self.seen[key]

    def _set(self, key: str, blob: bytes | None, write: Callable[[], None]) -> None:
        write()
        self.seen[key] = blob

    def get(self, name: str) -> bytes | None:
        return self._get(f"v{name}", lambda: self.inner.get(name))

    def put(self, name: str, blob: bytes) -> None:
        self._set(f"v{name}", blob, lambda: self.inner.put(name, blob))

    def delete(self, name: str) -> None:
        self._set(f"v{name}", None, lambda: self.inner.delete(name))

    def get_pane(self, pane: int) -> bytes | None:
        return self._get(f"p{pane}", lambda: self.inner.get_pane(pane))

    def put_pane(self, pane: int, blob: bytes) -> None:
        self._set(f"p{pane}", blob, lambda: self.inner.put_pane(pane, blob))

    def delete_pane(self, pane: int) -> None:
        self._set(f"p{pane}", None, lambda: self.inner.delete_pane(pane))

    def finish(self) -> None:
        """Write this micro-batch's values under a new token, put the token
        into the state store, and remove the previous token's file. The
        token changes even when the file cannot be written (a full disk):
        the old file no longer describes the state."""
        token = uuid.uuid4().hex
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            part = self.root / f"{token}.part"
            values = {k: v for k, v in self.known.items() if v is not None} | self.seen
            table = pa.table([list(values), list(values.values())], schema=SCHEMA)
            with pa.OSFile(str(part), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
                writer.write_table(table)
            os.replace(part, self.root / token)  # readers see a whole file or none
        except OSError:
            pass
        self.inner.put(TOKEN, token.encode())
        if self.old:
            with contextlib.suppress(OSError):
                (self.root / self.old).unlink(missing_ok=True)


__all__ = ["CACHE_DIR", "TOKEN", "CachedStore", "cache_root", "drop", "dropping", "uncached"]
