"""Where a pipeline's files are: a path in a pipeline file is read against
the file's own directory (`resolve`). Sources and sinks, the dead letter and
the report all resolve paths the same way, so the rule lives apart from any
of them."""

from __future__ import annotations

from pathlib import Path

from wid.spec.pipeline import is_uri


def resolve(path: str, base_dir: str) -> str:
    """A local `path` made absolute against `base_dir` (the TOML file's
    directory); a URI (``s3a://``, ``hdfs://``, ``file://``, ...) as it is,
    for Spark to resolve."""
    if is_uri(path):
        return path
    p = Path(path).expanduser()
    return str((p if p.is_absolute() else Path(base_dir) / p).resolve())


__all__ = ["resolve"]
