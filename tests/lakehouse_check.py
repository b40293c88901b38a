"""Shared by the lakehouse tests: a `tests.fixtures` pipeline moved from
SQLite to table sinks, with the session settings that bring their jars,
and a kill point just after a table commit inside a micro-batch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wid.io import lakehouse
from wid.spec.lakehouse import installed_spark_version

SQLITE_SINKS = ('[target]\nkind = "sqlite"\npath = "out.sqlite"\ntable = "windows"\n\n'
                '[dead_letter]\nkind = "sqlite"\npath = "out.sqlite"\ntable = "dead_letter"')
SPARK_CONF = 'conf = { "spark.sql.shuffle.partitions" = "2", "spark.ui.enabled" = "false" }'


def with_sinks(text: str, sinks: str, formats: Sequence[str]) -> str:
    """`text` (a `tests.fixtures.pipeline_toml`) with `sinks` for its
    ``[target]`` and ``[dead_letter]``, and a ``[spark] conf`` bringing the
    jars of `formats` (as `wid.io.lakehouse.with_connector` makes it) and
    `wid.io.lakehouse.LOCAL_SPEED`."""
    conf = {**lakehouse.with_connector({"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
                                       installed_spark_version() or "", formats), **lakehouse.LOCAL_SPEED}
    inline = "conf = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in conf.items()) + " }"
    assert SQLITE_SINKS in text and SPARK_CONF in text
    return text.replace(SQLITE_SINKS, sinks).replace(SPARK_CONF, inline)


@dataclass
class AfterTableCommit:
    """A kill point for `tests.crash_harness.kill_at`: micro-batch `batch`
    is running (in the offset log, not in the commit log) and a table has
    committed a version since it started (a new file matching `pattern` in
    its log directory `log`: Delta's ``_delta_log/*.json``, Iceberg's
    ``metadata/v*.metadata.json``), so Spark will replay a micro-batch the
    table already holds."""

    batch: int
    log: Path
    pattern: str = "*.json"
    seen: int | None = None

    def commits(self) -> int:
        return len(list(self.log.glob(self.pattern))) if self.log.exists() else 0

    def reached(self, root: Path, ck: Path) -> bool:
        running = (ck / "offsets" / str(self.batch)).exists() and not (ck / "commits" / str(self.batch)).exists()
        if not running:
            self.seen = None
            return False
        if self.seen is None:
            self.seen = self.commits()
            return False
        return self.commits() > self.seen
