"""`wid explain` without a session says whether a stream's rows combine
before the shuffle, by the rule of `wid.kernels.operator.combine.combines`
(tumbling and hopping windows outside ``dlq``) and the session's
``spark.wid.operator.combine``; both sides are checked against that rule."""

from __future__ import annotations

import pytest

from tests.fixtures import HOPPING, pipeline_toml
from wid.kernels.operator.combine import combines
from wid.kernels.operator.layout import OperatorSpec
from wid.spark.explain import outline
from wid.spark.kinds import plan_of
from wid.spark.operator.query import COMBINE_CONF
from wid.spec.toml_io import loads_pipeline

SESSION = "{ \"spark.sql.shuffle.partitions\" = \"2\", \"spark.ui.enabled\" = \"false\" }"
EXTENTS = {"hopping drop": HOPPING, "hopping dlq": HOPPING + '\nlate_data = "dlq"',
           "tumbling reopen": 'kind = "tumbling"\nduration_ms = 10000\nlate_data = "reopen"\nallowed_lateness_ms = 5000',
           "session": 'kind = "session"\ngap_ms = 5000', "count": 'kind = "count"\nsize_rows = 20'}


def combine_note(text: str) -> str:
    notes = [n for n in outline(loads_pipeline(text)).notes if n.startswith("rows ")]
    assert len(notes) == 1, notes
    return notes[0]


@pytest.mark.parametrize("name", sorted(EXTENTS))
def test_explain_says_whether_rows_combine_as_the_operator_decides(name: str) -> None:
    text = pipeline_toml(EXTENTS[name])
    spec = loads_pipeline(text)
    window = spec.window
    # the kernel's own rule, on what it reads: the engine shape and the late policy
    shape = plan_of(window).engine_shape(window, ("k", "ts", "v"), ())
    combined = combines(OperatorSpec(window.kind, shape, ("k",), (), (), late_data=window.late_data))
    assert combined == (name in ("hopping drop", "tumbling reopen")), name
    assert combine_note(text).startswith("rows combine") == combined, name
    off = text.replace(SESSION, SESSION[:-2] + f", \"{COMBINE_CONF}\" = \"false\" }}")
    assert off != text
    assert combine_note(off) == f"rows ship to their shard uncombined ({COMBINE_CONF} = false)"
    assert f"setting {COMBINE_CONF} = false" in outline(loads_pipeline(off)).notes
