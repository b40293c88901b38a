"""Spark's temporary files left in a stream's checkpoint by a killed run
are removed when the stream starts again, and the stream resumes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fixtures import good_rows, land, write_pipeline
from wid.pipelines.checkpoint import remove_stale_temp_files
from wid.pipelines.run import run as run_stream
from wid.spec.toml_io import load_pipeline

UUID = "0b6c4b52-5a3e-4d1f-9c2a-7e5d9f1a2b3c"
# Spark's CheckpointFileManager.createAtomic writes `.<name>.<uuid>[.TID<task>].tmp` and renames it;
# Hadoop's local file system writes the checksum `..<name>.<uuid>.tmp.crc` beside it
STALE = [f"offsets/.3.{UUID}.tmp", f"commits/.3.{UUID}.tmp", f"commits/..3.{UUID}.tmp.crc",
         f"state/0/1/.4.zip.{UUID}.TID17.tmp", f".metadata.{UUID}.tmp"]
KEPT = ["offsets/notes.tmp", f"offsets/3.{UUID}.tmp", "offsets/.3.not-a-uuid.tmp", f"offsets/.3.{UUID}.tmp.bak"]


def plant(checkpoint: Path, names: list[str]) -> None:
    for name in names:
        (checkpoint / name).parent.mkdir(parents=True, exist_ok=True)
        (checkpoint / name).write_text("v1\n{half written")


def test_only_sparks_temporary_files_are_removed(tmp_path: Path) -> None:
    plant(tmp_path, STALE + KEPT)
    removed = remove_stale_temp_files(str(tmp_path))
    assert sorted(str(p.relative_to(tmp_path)) for p in removed) == sorted(STALE)
    assert all(not (tmp_path / n).exists() for n in STALE) and all((tmp_path / n).exists() for n in KEPT)
    assert remove_stale_temp_files(f"file://{tmp_path}") == []
    assert remove_stale_temp_files(str(tmp_path / "none")) == [] and remove_stale_temp_files("s3a://b/ck") == []


def test_a_restarted_stream_removes_stale_temporary_files_and_resumes(spark: Any, tmp_path: Path) -> None:
    rows = good_rows(40)
    land(tmp_path / "land", [[json.dumps(r) for r in rows[i:i + 10]] for i in range(0, 30, 10)])
    spec = load_pipeline(write_pipeline(tmp_path))
    first = run_stream(spec, spark)
    checkpoint = Path(first.checkpoint or "")
    assert [b.batch_id for b in first.batches] == [0, 1, 2]
    plant(checkpoint, STALE + KEPT)  # as a run killed while writing micro-batch 3 leaves them
    land(tmp_path / "land", [[json.dumps(r) for r in rows[i:i + 10]] for i in range(0, 40, 10)])
    second = run_stream(spec, spark)
    assert [b.batch_id for b in second.batches] == [3] and second.total("rows_in") == 10
    assert all(not (checkpoint / n).exists() for n in STALE) and all((checkpoint / n).exists() for n in KEPT)
