"""The checks that depend on a stream live with the window's trigger policy
(`wid.semantics.trigger`): `wid validate` runs them on a streaming
pipeline, naming the field, and `wid explain` reads from them whether its
rows can be late at all. Neither starts Spark."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from tests.fixtures import pipeline_toml
from wid.cli import app
from wid.spark.explain import outline
from wid.spec.toml_io import loads_pipeline

LATE_DROPPED = "rows arriving after their window was emitted"


def _validate(tmp_path: Path, text: str) -> str:
    (tmp_path / "p.toml").write_text(text)
    done = CliRunner().invoke(app, ["validate", str(tmp_path / "p.toml")])
    return f"{done.exit_code} {done.output}"


def test_validate_refuses_a_stream_its_window_cannot_run_naming_the_field(tmp_path: Path) -> None:
    ranked = 'kind = "count"\nsize_rows = 3\norder_by = "v"'  # ranks by v: final only in batch
    said = _validate(tmp_path, pipeline_toml(ranked))
    assert said.startswith("2 ") and "transform.window.order_by: order_by = 'v' on a stream" in said
    batch = pipeline_toml(ranked).replace("stream = true\n", "")
    (tmp_path / "land").mkdir()  # a batch source's files must be there
    assert "stream = true" in pipeline_toml(ranked) and _validate(tmp_path, batch).startswith("0 ok:")


def test_explain_warns_of_dropped_late_rows_only_where_rows_can_be_late() -> None:
    def warned(extent: str) -> tuple[str, ...]:
        return outline(loads_pipeline(pipeline_toml(extent))).warnings

    assert any(LATE_DROPPED in w for w in warned('kind = "count"\nsize_rows = 3'))  # ranks by order: late rows
    assert not any(LATE_DROPPED in w for w in warned('kind = "count"\nsize_rows = 3\nrank_by = "arrival"'))
    assert any(LATE_DROPPED in w for w in warned('kind = "tumbling"\nduration_ms = 10000'))
