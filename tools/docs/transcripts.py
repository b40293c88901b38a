"""The worked-examples page, generated from ``tests/transcripts/*.toml``.

Each transcript is a small stream worked out by hand: its window, its
micro-batches (rows, batch time) and, per micro-batch, the exact watermark,
emitted windows and late rows. The suite replays every one through the
streaming oracle and the WID operator (`tests.transcript`), so what this page
shows is what wid does. Here each is laid out as Flink's documentation lays
out its examples: the query, the input, the output.

    python -m tools.docs.transcripts      # prints the page
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[2] / "tests" / "transcripts"

# Sections of the page, by the transcript file's name prefix, in order.
SECTIONS = (
    ("tumbling", "Tumbling windows"),
    ("hopping", "Hopping windows: late rows in generous and consistent mode"),
    ("session", "Session windows"),
    ("count", "Count windows"),
    ("rolling", "Rolling windows"),
    ("landmark", "Landmark windows"),
    ("", "Watermarks, idle sources and punctuations"),
)


def load(path: Path) -> dict[str, Any]:
    """A transcript file: its parsed TOML plus its drawing (the comment lines
    before ``[window]``)."""
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    drawing: list[str] = []
    window: list[str] = []
    for line in text.splitlines():
        if line.startswith("[[batch]]"):
            break
        if window or line.startswith("[window]"):
            window.append(line.replace("[window", "[transform.window"))
        elif line.startswith("#"):
            drawing.append(line[2:] if line.startswith("# ") else line[1:])
    return {"name": path.stem, "doc": doc, "drawing": drawing, "window": "\n".join(window).strip()}


def _cell(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "" if value is None else str(value).replace("|", "\\|")


def _table(rows: list[dict[str, Any]], first: tuple[str, ...] = ()) -> list[str]:
    columns = [c for c in first if any(c in r for r in rows)]
    columns += [c for r in rows for c in r if c not in columns]
    columns = list(dict.fromkeys(columns))
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(_cell(r.get(c)) for c in columns) + " |" for r in rows]
    return out


def _emitted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in rows:
        e = dict(e)
        retract = e.pop("retract", False)
        final = e.pop("final", True)
        status = "retracted" if retract else ("final" if final else "partial")
        out.append({**e, "status": status})
    return out


def section(t: dict[str, Any]) -> list[str]:
    """One transcript as Markdown."""
    doc = t["doc"]
    window = doc["window"]
    kind = window["kind"]
    lines = [f"### {doc.get('title', t['name'])}", "", f"`tests/transcripts/{t['name']}.toml`", ""]
    if t["drawing"]:
        lines += ["```text", *t["drawing"], "```", ""]
    lines += ["The window:", "", "```toml", t["window"], "```", ""]
    for i, batch in enumerate(doc["batch"], start=1):
        at = f", at {batch['at_ms']} ms" if "at_ms" in batch else ""
        lines += [f"**Micro-batch {i}**{at}: rows in", ""]
        lines += _table(batch["rows"]) if batch["rows"] else ["(none)"]
        wm = batch.get("watermark_ms")
        lines += ["", f"Watermark after it: {'none yet' if wm is None else f'{wm} ms'}.", ""]
        first = ("start", "end", "window_id") if kind != "rolling" else ()
        emitted = _emitted(batch.get("emit", []))
        lines += ["Emitted:", ""] + (_table(emitted, first) if emitted else ["nothing"]) + [""]
        if batch.get("late"):
            lines += ["Late, to the dead letter:", "", *_table(batch["late"]), ""]
        if batch.get("late_dropped"):
            lines += [f"Late and dropped: {batch['late_dropped']} row(s).", ""]
    return lines


def page() -> str:
    """The whole page, as Markdown."""
    transcripts = [load(p) for p in sorted(HERE.glob("*.toml"))]
    lines = [
        "# Worked examples",
        "",
        "Small streams worked out by hand, one per rule: the window, each micro-batch's rows, and what "
        "comes out of it: the watermark after it, the windows it emits (bounds in milliseconds; `final`, "
        "`partial` with `emit = \"on_update\"`, or `retracted`: the sink deletes that natural key) and its "
        "late rows. Rows are judged against the watermark *before* their micro-batch "
        "([the rule](../semantics.md#completeness)).",
        "",
        "These are the files under `tests/transcripts/`; the test suite replays each one through the "
        "streaming oracle and through the WID operator on Spark, and this page is generated from them "
        "when the site is built, so it shows what wid does. A row's `_source` names its source (default "
        "`a`); `_topic` and `_partition` make it a Kafka message; `punct = true` marks a punctuation.",
        "",
    ]
    done: set[str] = set()
    for prefix, title in SECTIONS:
        chosen = [t for t in transcripts if t["name"] not in done and t["name"].startswith(prefix)]
        if not chosen:
            continue
        lines += [f"## {title}", ""]
        for t in chosen:
            lines += section(t)
            done.add(t["name"])
    return "\n".join(lines)


if __name__ == "__main__":
    print(page())
