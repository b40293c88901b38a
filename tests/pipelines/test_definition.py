"""A stream's checkpoint knows its pipeline (`wid.pipelines.definition`):
a restart with a changed field that keeps the state's meaning goes on, with
one notice, and gives the streaming oracle's answer for the new definition
from the change on; a change that does not is refused before Spark starts,
in one line naming the field, its old and new values, and nothing of the
target changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import good_rows, land, pipeline_toml, stamped, table
from tests.sink_check import assert_same_rows, folded
from wid.pipelines import definition
from wid.pipelines.run import run
from wid.semantics.stream_oracle import run_stream
from wid.spec.toml_io import loads_pipeline
from wid.spec.window import Window

TUMBLING = 'kind = "tumbling"\nduration_ms = 10000'
BASE = pipeline_toml(TUMBLING, name="changing")
T0 = 1_700_000_000_000


def files() -> list[list[dict[str, Any]]]:
    """Six micro-batches of rows in time order, from the second on each
    with a row 40 s behind the rest (late once the watermark passed it)."""
    rows = good_rows(60)
    out = [rows[i:i + 10] for i in range(0, 60, 10)]
    for i, batch in enumerate(out[1:], start=1):
        batch.append({"k": "ab"[i % 2], "ts": batch[0]["ts"] - 40_000, "v": 100.0})
    return out


def spec_of(root: Path, text: str) -> Any:
    (root / "pipeline.toml").write_text(text)
    return loads_pipeline(text, base_dir=str(root))


@pytest.fixture(scope="module")
def first_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stream of the base pipeline that ran two micro-batches."""
    root = tmp_path_factory.mktemp("first")
    land(root / "land", [[json.dumps(r) for r in f] for f in files()[:2]])
    assert run(spec_of(root, BASE), spark).identity_holds
    return root


@pytest.fixture
def restarted(first_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of `first_run`'s directory where nothing may start Spark."""
    root = tmp_path / "copy"
    shutil.copytree(first_run, root)

    def no_spark(_: Any) -> Any:
        raise AssertionError("Spark was started")
    monkeypatch.setattr("wid.pipelines.run.session_for", no_spark)
    yield root


REFUSED = {
    "duration_ms": ("duration_ms = 10000", "duration_ms = 20000"),
    "kind": (TUMBLING, 'kind = "hopping"\nduration_ms = 20000\nhop_ms = 10000'),
    "group_by": ('group_by = ["k"]', "group_by = []"),
    "event_time_column": ('event_time_column = "ts"', 'event_time_column = "v"'),
    "event_time_unit": ('event_time_unit = "ms"', 'event_time_unit = "us"'),
    "time_zone": ("duration_ms = 10000", 'duration_ms = 10000\ntime_zone = "Asia/Kathmandu"'),
    "origin_ms": ("duration_ms = 10000", "duration_ms = 10000\norigin_ms = 5000"),
    "aggregations": ('agg = "sum"', 'agg = "max"'),
    "late_mode": ('late_mode = "consistent"', 'late_mode = "generous"'),
    "late_data": ("duration_ms = 10000", 'duration_ms = 10000\nlate_data = "reopen"\nallowed_lateness_ms = 30000'),
    "emit": ("duration_ms = 10000", 'duration_ms = 10000\nemit = "on_update"'),
    "sources": ('path = "land"', 'path = "land"\nname = "sensors"'),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_change_the_state_cannot_carry_is_refused_before_spark_starts(restarted: Path, name: str) -> None:
    before = table(restarted / "out.sqlite", "windows")
    old, new = REFUSED[name]
    assert old in BASE
    with pytest.raises(definition.DefinitionChanged) as err:
        run(spec_of(restarted, BASE.replace(old, new, 1)))
    message = str(err.value)
    assert "\n" not in message and "stream.checkpoint" in message and "new checkpoint" in message
    assert name in [c.field for c in err.value.changes], message
    assert table(restarted / "out.sqlite", "windows") == before


def test_wid_run_says_it_in_one_line_with_exit_code_2(first_run: Path, tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(first_run, root)
    (root / "pipeline.toml").write_text(BASE.replace("duration_ms = 10000", "duration_ms = 20000"))
    done = subprocess.run([sys.executable, "-m", "wid", "run", "pipeline.toml"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "duration_ms 10000 -> 20000" in lines[0], done.stderr


def test_allowed_changes_go_on_with_the_oracle_s_answer_for_the_new_definition(spark: Any, tmp_path: Path) -> None:
    batches = files()
    steps = [  # (files landed before the run, the pipeline's text): each run takes one more file
        (2, BASE),
        (3, BASE.replace("lateness_ms = 5000", "lateness_ms = 8000")),
        (4, BASE.replace("lateness_ms = 5000", "lateness_ms = 8000\nsource_idleness_ms = 60000\nmax_future = \"off\"")
         .replace("max_groups_per_window = 1000", "max_groups_per_window = 500")),
        (5, BASE.replace("lateness_ms = 5000", 'lateness_ms = 8000\nlate_data = "dlq"')),
        (6, BASE.replace("lateness_ms = 5000", 'lateness_ms = 8000\nlate_data = "dlq"\nwindow_start_column = "ws"')
         .replace('table = "windows"', 'table = "windows_ws"')),
    ]
    windows: list[Window] = []
    notices: list[list[str]] = []
    for landed, text in steps:
        land(tmp_path / "land", [[json.dumps(r) for r in f] for f in batches[:landed]])
        spec = spec_of(tmp_path, text)
        said: list[str] = []
        assert run(spec, spark, on_notice=said.append).identity_holds
        windows.append(spec.window)
        notices.append([n for n in said if "changed since" in n])
    assert [len(n) for n in notices] == [0, 1, 1, 1, 1]
    assert "lateness_ms 5000 -> 8000" in notices[1][0]
    assert "late_data" in notices[3][0] and "window_start_column" in notices[4][0] and "target" in notices[4][0]

    # run i read file i + 1 (the first run read files 0 and 1)
    results = run_stream(stamped(batches), windows[0], redefined={i + 1: w for i, w in enumerate(windows) if i})
    old_table, new_table = table(tmp_path / "out.sqlite", "windows"), table(tmp_path / "out.sqlite", "windows_ws")
    assert_same_rows(windows[0], old_table, folded(windows[0], results[:5], list(old_table[0])))
    assert_same_rows(windows[-1], new_table, folded(windows[-1], results[5:], list(new_table[0])))
    late = [d.row for r in results for d in r.late]
    dead = [json.loads(d["row_json"]) for d in table(tmp_path / "out.sqlite", "dead_letter")]
    assert late and sorted(map(json.dumps, late)) == sorted(map(json.dumps, dead))


@pytest.mark.parametrize("through", ["python", "spark"])
def test_a_checkpoint_of_unknown_definition_starts_with_a_warning_and_is_recorded(
        spark: Any, first_run: Path, tmp_path: Path, through: str) -> None:
    # a checkpoint elsewhere than on a local disk (s3a://...) is read and written through Spark
    root = tmp_path / "copy"
    shutil.copytree(first_run, root)
    checkpoint = root / "changing.checkpoint"
    shutil.rmtree(checkpoint / definition.FILE)
    spec = spec_of(root, BASE)
    session = spark if through == "spark" else None
    notices = definition.check(spec, str(checkpoint), session)
    assert len(notices) == 1 and "cannot tell" in notices[0]
    assert definition.check(spec, str(checkpoint)) == []  # recorded: the same definition says nothing
    changed = spec_of(root, BASE.replace("duration_ms = 10000", "duration_ms = 20000"))
    with pytest.raises(definition.DefinitionChanged, match="duration_ms 10000 -> 20000"):
        definition.check(changed, str(checkpoint), spark)


def test_every_window_field_is_classified_here_and_in_the_docs() -> None:
    from wid.spec.kinds import KINDS

    shared = {f.name for f in fields(Window) if f.compare and f.name != "shape"}
    assert shared | {f.name for shape in KINDS.values() for f in fields(shape) if f.compare} <= set(
        definition.WINDOW_FIELDS)
    page = (Path(__file__).parents[2] / "docs" / "how-to" / "changing-a-stream.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    for name, (verdict, _) in definition.WINDOW_FIELDS.items():
        written = name.removesuffix("_ms").removesuffix("_months")
        found = [r for r in rows if f"`{written}`" in r.split("|")[1]]
        assert len(found) == 1 and verdict in found[0].split("|")[2], (name, found)


@pytest.mark.parametrize(("old", "new", "verdict"), [("drop", "dlq", definition.ALLOWED),
                                                      ("dlq", "drop", definition.ALLOWED),
                                                      ("drop", "reopen", definition.REFUSED),
                                                      ("reopen", "dlq", definition.REFUSED)])
def test_late_rows_may_change_place_but_not_a_reopen_budget(old: str, new: str, verdict: str) -> None:
    spec = loads_pipeline(BASE)
    before = replace(spec.window, late_data=old, allowed_lateness_ms=30_000 if old == "reopen" else None)
    after = replace(spec.window, late_data=new, allowed_lateness_ms=30_000 if new == "reopen" else None)
    changes = definition.compare(definition.definition_of(replace(spec, window=before)),
                                 definition.definition_of(replace(spec, window=after)))
    assert {c.verdict for c in changes if c.field == "late_data"} == {verdict}
