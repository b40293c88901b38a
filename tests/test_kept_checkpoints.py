"""Upgrades from every released state layout: the checkpoints kept under
tests/checkpoints (one set per layout, each made by its release's code with
`tools.kept_checkpoints`) restart with the current code, read the files
that arrived since, and leave in their sinks exactly what the streaming
oracle says the whole stream writes: the windows emitted before the
upgrade and after it, and every late and rejected row in the dead letter."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import stamped, table
from tests.sink_check import assert_same_rows, folded
from tools import kept_checkpoints as kept
from wid.pipelines.run import run
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import load_pipeline

HERE = Path(__file__).parent / "checkpoints"
SETS = sorted(p.relative_to(HERE).as_posix() for p in HERE.glob("layout-*/*") if p.is_dir())


def test_every_layout_has_its_set() -> None:
    from wid.kernels.operator.shard import LAYOUT

    layouts = {int(s.split("/")[0].removeprefix("layout-")) for s in SETS}
    assert layouts == set(range(1, LAYOUT + 1)), "keep a checkpoint set of every layout (tools/kept_checkpoints.py)"
    assert {s.split("/")[1] for s in SETS if s.startswith(f"layout-{LAYOUT}/")} == set(kept.EXTENTS)


@pytest.mark.parametrize("name", SETS)
def test_a_kept_checkpoint_restarts_with_the_oracle_s_answer(spark: Any, tmp_path: Path, name: str) -> None:
    root = tmp_path / "stream"
    shutil.copytree(HERE / name, root)
    kept.relocate(root, f"file://{kept.ROOT}", f"file://{root.resolve()}")
    kept.stamp(root / "land")
    kept.stamp(root / "later")
    for later in sorted((root / "later").iterdir()):
        shutil.copy2(later, root / "land" / later.name)  # the files that arrived while wid was upgraded
    spec = load_pipeline(root / "pipeline.toml")
    report = run(spec, spark)

    assert report.identity_holds and len(report.batches) == kept.FILES - kept.BEFORE  # the old files not read again
    results = run_stream(stamped([kept.rows(i) for i in range(kept.FILES)]), spec.window)
    written = table(root / "out.sqlite", "windows")
    assert_same_rows(spec.window, written, folded(spec.window, results, list(written[0])))
    late = sorted(json.dumps(d.row, sort_keys=True) for r in results for d in [*r.late, *r.rejected])
    dead = sorted(json.dumps(json.loads(d["row_json"]), sort_keys=True) for d in table(root / "out.sqlite", "dead_letter"))
    assert dead == late
