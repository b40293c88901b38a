"""Transcripts that must fail (tests/wrong_transcripts.py), through the WID
operator's shards run without Spark: each right transcript passes, and
`Transcript.check` rejects its wrong copy at the batch whose expectation
was changed."""

from __future__ import annotations

import re

import pytest

from tests.kernels.operator.harness import LocalOperator
from tests.transcript import Transcript, is_punctuation, schema_of
from tests.wrong_transcripts import Wrong, wrong_transcripts
from wid.semantics.stream_oracle import BatchResult

WRONGS = wrong_transcripts()


def replay(transcript: Transcript) -> list[BatchResult]:
    """`transcript` through two shards."""
    return LocalOperator(transcript.window, schema_of(transcript), 2, is_punctuation).run(transcript.batches)


@pytest.mark.parametrize("case", WRONGS, ids=[w.path.stem for w in WRONGS])
def test_the_shards_pass_the_right_transcript_and_fail_the_wrong_one(case: Wrong) -> None:
    case.right.check(replay(case.right))
    with pytest.raises(AssertionError, match=rf"{re.escape(case.wrong.name)}, batch {case.changes[0][0]}\b"):
        case.wrong.check(replay(case.wrong))
