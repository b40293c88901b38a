"""The console sink prints rows as text: control characters in the data
come out as escapes, and neither markup nor emoji codes are read."""

from __future__ import annotations

from typing import Any

import pytest

from wid.io.sinks import write_console


def test_the_console_sink_prints_data_as_text(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    df = spark.createDataFrame([("\x1b[31mred", "root:x:0 [bold]b[/bold]", "two\nlines")], "a string, b string, c string")
    assert write_console(df, 5, "windows \x1b]0;t\x07") == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out, out
    assert "\\x1b[31mred" in out and "root:x:0 [bold]b[/bold]" in out and "two\\nlines" in out, out
    assert "windows \\x1b]0;t\\x07" in out, out
