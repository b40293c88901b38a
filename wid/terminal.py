"""Text for a terminal: what wid prints is text, never commands to the
terminal.

Values from data and names from files (a group key, a column, a path, a
message that quotes them) may hold characters a terminal acts on: ESC
starts the sequences that colour, move the cursor or set the window's
title, BEL ends a title, a carriage return overwrites the line, and
Unicode's bidirectional controls reorder what is shown. `shown` writes
each as the escape Python writes (``\\x1b``, ``\\r``, ``\\u202e``).

`Terminal` is the one kind of Rich console wid prints through: it reads
no markup (``[bold]``, ``[transform] sql`` and ``local[2]`` stay as they
are) and no emoji codes (``root:x:0`` stays, where Rich would print
``root❌0``), highlights nothing, and shows every string it renders
through `shown`, keeping the newlines of wid's own multi-line text. A
table cell that holds data is given as ``shown(value)``, so that its
newlines are escapes too and one row stays one row.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

# Unicode's control characters (C0, DEL, C1) and its bidirectional controls (Unicode Standard Annex #9)
_BEYOND_C0 = r"\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(rf"[\x00-\x1f{_BEYOND_C0}]")
_CONTROL_BUT_NEWLINE = re.compile(rf"[\x00-\x09\x0b-\x1f{_BEYOND_C0}]")


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # Python's own escape: \x1b, \t, \u202e


def shown(text: object, lines: bool = False) -> str:
    """`text` (any object, as ``str``) with every character a terminal acts
    on written as its Python escape: the control characters (C0, DEL, C1)
    and the bidirectional controls. With `lines`, newlines stay newlines
    (wid's own multi-line text); otherwise they are escaped too (a table
    cell, one line of a value). Everything else is kept as it is; text
    already shown is shown unchanged."""
    return (_CONTROL_BUT_NEWLINE if lines else _CONTROL).sub(_escape, str(text))


class Terminal(Console):
    """A Rich console for wid's output: no markup, no emoji codes, no
    highlighting, soft wrapping (long lines are left to the terminal), and
    every string it renders (printed text, table cells, titles) shown
    through `shown`, newlines kept. Takes Rich's `Console` arguments."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**{"soft_wrap": True, **options, "markup": False, "emoji": False, "highlight": False})

    def render_str(self, text: str, **options: Any) -> Text:
        """Rich's `Console.render_str` over ``shown(text, lines=True)``."""
        return super().render_str(shown(text, lines=True), **options)


def fold_path(text: str, width: int) -> str:
    """`text` (a path, or words holding one) cut into lines of at most
    `width` characters after a space or a path separator (``/``, ``\\``),
    joined by newlines; a piece longer than `width` stays whole, for the
    renderer to fold. So a path breaks between its folders, never inside a
    name."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^/\\ ]*[/\\ ]|[^/\\ ]+$", text):
        if line and len(line) + len(piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    return "\n".join([*lines, line.rstrip()] if line else lines)


__all__ = ["Terminal", "fold_path", "shown"]
