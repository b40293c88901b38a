"""Transcripts that must fail (tests/wrong_transcripts.py): the streaming
oracle passes each right transcript and `Transcript.check` rejects its wrong
copy at the batch whose expectation was changed."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests.transcript import all_transcripts, is_punctuation
from tests.wrong_transcripts import WRONG, Wrong, wrong_transcripts
from tools.docs import transcripts as examples_page
from wid.semantics.stream_oracle import run_stream

WRONGS = wrong_transcripts()


def test_there_are_wrong_transcripts_of_every_kind_of_mistake() -> None:
    assert {w.changes[0][1] for w in WRONGS if len(w.changes) == 1} == {"watermark_ms", "emit", "late", "late_dropped"}
    kinds = {tomllib.loads(w.path.read_text())["window"]["kind"] for w in WRONGS}
    assert kinds == {"tumbling", "hopping", "session", "count", "rolling", "landmark"}


@pytest.mark.parametrize("case", WRONGS, ids=[w.path.stem for w in WRONGS])
def test_a_wrong_transcript_changes_one_expectation_of_a_right_one(case: Wrong) -> None:
    # the same window and rows as its original, and one expectation of one batch changed
    assert case.right.name in {t.name for t in all_transcripts()}
    assert len(case.changes) == 1 and case.changes[0][0] >= 1, case.changes


@pytest.mark.parametrize("case", WRONGS, ids=[w.path.stem for w in WRONGS])
def test_the_oracle_passes_the_right_transcript_and_fails_the_wrong_one(case: Wrong) -> None:
    case.right.check(run_stream(case.right.batches, case.right.window, is_punctuation))
    got = run_stream(case.wrong.batches, case.wrong.window, is_punctuation)
    batch = case.changes[0][0]
    with pytest.raises(AssertionError, match=rf"{re.escape(case.wrong.name)}, batch {batch}\b"):
        case.wrong.check(got)


def test_normal_discovery_leaves_the_wrong_transcripts_out() -> None:
    wrong = {p.stem for p in WRONG.glob("*.toml")}
    assert wrong and not wrong & {t.name for t in all_transcripts()}
    page = examples_page.page()
    assert "wrong" not in {p.parent.name for p in examples_page.HERE.glob("*.toml")}
    assert not any(name in page for name in wrong) and "WRONG" not in page
