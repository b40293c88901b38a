"""Transcripts that must fail, as Beam's trigger transcripts have: each file
under ``tests/transcripts/wrong/`` is a copy of a right transcript
(``<original>--<what is wrong>.toml``) with ONE expectation changed (a
watermark off by one, an emission missing, a wrong aggregate, an extra or a
missing late row, a wrong count of dropped rows, a retraction missing, a
partial window called final), its comments saying what. A runner that
`Transcript.check` accepts for such a file, or a check that accepts
anything, is broken. Normal discovery (`tests.transcript.all_transcripts`,
the worked-examples page) reads only the files directly under
``tests/transcripts/``, never these."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.transcript import HERE, Transcript, load

WRONG = HERE / "wrong"
EXPECTATIONS = ("watermark_ms", "emit", "late", "late_dropped")  # what a batch expects (tests/transcript.py)


@dataclass(frozen=True)
class Wrong:
    """A transcript that must fail, `right`, the one it copies, and
    `changes`: the (1-based batch, expectation) pairs where they differ."""

    path: Path
    wrong: Transcript
    right: Transcript
    changes: list[tuple[int, str]]


def original_of(path: Path) -> Path:
    """The right transcript a wrong one copies: the part of its name before ``--``."""
    return HERE / f"{path.stem.split('--')[0]}.toml"


def changes(wrong: dict[str, Any], right: dict[str, Any]) -> list[tuple[int, str]]:
    """Where two transcript documents differ: (batch, expectation) pairs, and
    ``(0, "input")`` when the window, the number of batches or any batch's
    rows or timestamp differ (a wrong transcript changes expectations only)."""
    if wrong["window"] != right["window"] or len(wrong["batch"]) != len(right["batch"]):
        return [(0, "input")]
    out = []
    for i, (w, r) in enumerate(zip(wrong["batch"], right["batch"], strict=True), start=1):
        if w["rows"] != r["rows"] or w.get("at_ms") != r.get("at_ms") or set(w) - {"rows", "at_ms", *EXPECTATIONS}:
            out.append((0, "input"))
        out += [(i, key) for key in EXPECTATIONS if w.get(key) != r.get(key)]
    return out


def wrong_transcripts() -> list[Wrong]:
    """Every transcript under ``tests/transcripts/wrong/``, with its original."""
    out = []
    for path in sorted(WRONG.glob("*.toml")):
        right = original_of(path)
        diff = changes(tomllib.loads(path.read_text()), tomllib.loads(right.read_text()))
        out.append(Wrong(path, load(path), load(right), diff))
    return out
