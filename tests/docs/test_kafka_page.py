"""The Kafka how-to states what the code does: the connector release wid
uses for each Spark line, and every header a dead letter carries."""

from __future__ import annotations

import re

from tests.docs.snippets import ROOT
from wid.io.kafka import connector_release

PAGE = (ROOT / "docs" / "how-to" / "kafka.md").read_text(encoding="utf-8")


def test_the_connector_table_is_the_release_wid_uses_for_each_line() -> None:
    rows = re.findall(r"^\| (4\.\d)\.x \| (4\.\d\.\d)", PAGE, re.M)
    assert [line for line, _ in rows] == ["4.0", "4.1", "4.2", "4.3"]
    for line, release in rows:
        assert connector_release(f"{line}.9") == release, line


def test_every_header_a_kafka_sink_writes_is_documented() -> None:
    source = (ROOT / "wid" / "io" / "kafka.py").read_text(encoding="utf-8")
    headers = set(re.findall(r'"(wid\.[a-z_]+)"', source))
    assert {"wid.reason", "wid.source", "wid.offset", "wid.id"} <= headers
    table = PAGE.split("| header | value |", 1)[1].split("\n\n", 1)[0]
    assert sorted(h for h in headers if f"`{h}`" not in table) == []
