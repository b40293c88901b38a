"""Spark's temporary files in a stream's checkpoint.

Spark writes every checkpoint file (the offset and commit logs, the
metadata, the state stores' files) atomically: to a temporary file
``.<name>.<uuid>[.TID<task>].tmp`` in the same directory, which it then
renames (``CheckpointFileManager.createAtomic``); Hadoop's local file
system writes a checksum ``..<name>.<uuid>[.TID<task>].tmp.crc`` beside it.
A run killed between the write and the rename leaves them behind. Spark
never reads them (its logs list only the files named by batch), nor removes
them, so they pile up over restarts.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

from wid.spec.pipeline import is_uri

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
TEMP_FILE = re.compile(rf"^(?:\..+\.{_UUID}(?:\.TID\d+)?\.tmp|\.\..+\.{_UUID}(?:\.TID\d+)?\.tmp\.crc)$")


def local_directory(checkpoint: str) -> Path | None:
    """The local directory `checkpoint` names (a path, or a ``file:`` URI),
    or None for another file system's URI (``s3a://``, ``hdfs://``)."""
    if not is_uri(checkpoint) and not checkpoint.startswith("file:"):
        return Path(checkpoint)
    parsed = urlparse(checkpoint)
    return Path(parsed.path) if parsed.scheme == "file" else None


def remove_stale_temp_files(checkpoint: str) -> list[Path]:
    """Remove Spark's temporary files (`TEMP_FILE`) under the local
    checkpoint directory `checkpoint` (a path or ``file:`` URI; on other
    file systems, or where the directory is not there, nothing is done);
    returns the paths removed. Called as a stream starts, before Spark
    writes to the checkpoint: one query at a time writes a checkpoint, so
    any temporary file there is a killed run's. Only that pattern is
    touched; files Spark reads, and anything else, stay."""
    root = local_directory(checkpoint)
    if root is None or not root.is_dir():
        return []
    removed = []
    for directory, _, names in os.walk(root):
        for name in names:
            if TEMP_FILE.match(name):
                path = Path(directory) / name
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


__all__ = ["TEMP_FILE", "local_directory", "remove_stale_temp_files"]
