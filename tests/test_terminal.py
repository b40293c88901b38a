"""What wid prints is text, never commands to the terminal: control
characters from data come out as escapes (`wid.terminal.shown`), and no
console wid prints through reads markup or emoji codes."""

from __future__ import annotations

import ast
import io
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from rich.table import Table

from wid.terminal import Terminal, shown

ROOT = Path(__file__).resolve().parents[1]
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # Unicode's bidirectional controls


def dangerous(c: str) -> bool:
    """What a terminal may act on: Unicode's control characters (C0, DEL,
    C1: ESC starts every escape sequence, BEL ends a title) and the
    bidirectional controls, which reorder what is shown."""
    return unicodedata.category(c) == "Cc" or c in BIDI


@given(st.text())
def test_nothing_a_terminal_acts_on_survives(text: str) -> None:
    out = shown(text)
    assert not any(dangerous(c) for c in out)
    assert shown(out) == out  # text already shown is shown as it is
    # character by character: each dangerous one as Python escapes it, the others as they are
    assert out == "".join(repr(c)[1:-1] if dangerous(c) else c for c in text)


@given(st.text())
def test_lines_keep_their_newlines(text: str) -> None:
    out = shown(text, lines=True)
    assert out.split("\n") == [shown(part) for part in text.split("\n")]


def test_escapes_read_as_python_writes_them() -> None:
    assert shown("\x1b[31mred\x1b]0;title\x07") == "\\x1b[31mred\\x1b]0;title\\x07"
    assert shown("a\tb\r\nc\u202ed") == "a\\tb\\r\\nc\\u202ed"
    assert shown("root:x:0 ❌ Zürich [bold]") == "root:x:0 ❌ Zürich [bold]"


def test_a_terminal_shows_data_as_text() -> None:
    out = io.StringIO()
    console = Terminal(file=out, width=80)
    table = Table(title="rows \x1b[2J")
    table.add_column("k\x1b[1m")
    table.add_row("root:x:0 \x1b]0;t\x07")
    console.print("line one\nline two :smile: [red]x[/red] \x1b[31m")
    console.print(table)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "line one\nline two :smile: [red]x[/red] \\x1b[31m" in text
    assert "root:x:0 \\x1b]0;t\\x07" in text and "rows \\x1b[2J" in text and "k\\x1b[1m" in text


def test_every_console_in_wid_is_a_terminal() -> None:
    """A Rich Console made anywhere in wid but `wid.terminal` would read
    markup and emoji codes, and pass control characters through."""
    made = []
    for path in ROOT.glob("wid/**/*.py"):
        if path.name == "terminal.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Console":
                made.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert made == []
