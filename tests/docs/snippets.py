"""The code blocks of the README and the documentation, and how the suite
runs them (``tests/docs/test_snippets.py``).

The rule, by the fence's language:

- ```` ```python ````: run. A page's Python blocks run in order in one
  namespace (a later block may use what an earlier one defined), in a fresh
  temporary directory. A ```` ```text title="Output" ```` block right after
  one is what it must print, exactly (trailing spaces aside).
- ```` ```toml ````: loaded by wid's own loader, `wid.spec.toml_io.loads_pipeline`.
  A whole pipeline (it has ``name``) is loaded as it is; a fragment (say
  a ``[transform.window]`` or a ``[target]`` table alone) is laid over a
  minimal pipeline (`BASE`: a table each of source, window, sinks) and the
  result loaded, so every key in it is checked against the spec. With
  ``title="NAME.toml"`` the block is also written to that file in the
  page's directory, for the page's later Python blocks to read.
- ```` ```sh ````, ```` ```text ````, ```` ```sql ````, ```` ```yaml ````:
  shown, never run. Shell commands install things, start servers or
  clusters and run pipelines on data the suite does not have; write them so.
- A block titled with the path of a file of the repository
  (``title="examples/..."``, any language) shows that file: its text must
  be the file's, and it is not run here (the file runs in its own test).
- Any other language, or a fence without one, fails the suite: no block is
  skipped by accident.
"""

from __future__ import annotations

import contextlib
import copy
import io
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RUN = ("python", "toml")
SHOWN = ("sh", "text", "sql", "yaml")
OUTPUT = "Output"
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")

# The minimal pipeline a TOML fragment is laid over.
BASE: dict[str, Any] = {
    "name": "snippet",
    "source": {"format": "csv", "path": "rows.csv", "schema": "k STRING, ts TIMESTAMP, v DOUBLE"},
    "transform": {"window": {"kind": "tumbling", "duration_ms": 60_000, "event_time_column": "ts",
                             "group_by": ["k"], "aggregations": [{"agg": "count", "as": "n"}]}},
}


@dataclass
class Block:
    """One fenced block: where it is, its language and attributes, its text."""

    path: Path
    line: int
    lang: str
    attrs: dict[str, str] = field(default_factory=dict)
    text: str = ""

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """Every Markdown page of the README and the documentation."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
             ROOT / "benchmarks" / "RESULTS.md", ROOT / "benchmarks" / "HISTORY.md"]
    return [p for p in found if p.is_file()]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order (indented ones in
    lists too, their indentation removed)."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m["indent"]), m["fence"], m["info"].strip()
        body = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^ {{0,{indent + 3}}}{re.escape(fence)}\s*$", lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        lang = info.split()[0] if info else ""
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', info))
        out.append(Block(path, i + 1, lang, attrs, "\n".join(body) + "\n"))
        i = j + 1
    return out


def check_languages(found: list[Block]) -> list[str]:
    """The blocks whose language is neither run nor shown: each a problem."""
    return [f"{b.where}: fence language {b.lang or '(none)'!r} is neither run ({', '.join(RUN)}) nor shown "
            f"({', '.join(SHOWN)})" for b in found if b.lang not in RUN + SHOWN]


def shipped(block: Block) -> Path | None:
    """The file of the repository `block` shows (its ``title`` is a path
    from the root, with a ``/``), or None: see the module's rule."""
    title = block.attrs.get("title", "")
    return ROOT / title if "/" in title else None


def is_output(block: Block) -> bool:
    return block.lang == "text" and block.attrs.get("title") == OUTPUT


def lay_over_base(fragment: dict[str, Any]) -> dict[str, Any]:
    """`fragment`'s tables over `BASE`: a table it names replaces BASE's; a
    ``[transform.window]`` alone keeps BASE's other transform keys; a
    ``[join]`` replaces the ``[transform]``."""
    doc = copy.deepcopy(BASE)
    for key, value in fragment.items():
        if key == "transform" and isinstance(value, dict):
            doc["transform"] = {**doc["transform"], **value}
        else:
            doc[key] = value
    if "join" in fragment:
        doc.pop("transform", None)
    return doc


def load_toml(block: Block, workdir: Path) -> Any:
    """Load a TOML block as `wid run` would (see the module's rule)."""
    import tomli_w

    from wid.spec.toml_io import loads_pipeline

    doc = tomllib.loads(block.text)
    if "name" not in doc:
        doc = lay_over_base(doc)
    if "title" in block.attrs:
        (workdir / block.attrs["title"]).write_text(block.text, encoding="utf-8")
    return loads_pipeline(tomli_w.dumps(doc), base_dir=str(workdir))


def run_python(block: Block, namespace: dict[str, Any]) -> str:
    """Run a Python block in `namespace`; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, block.where, "exec"), namespace)  # noqa: S102 - the documentation's own code
    return out.getvalue()


def same_output(got: str, want: str) -> bool:
    def norm(s: str) -> list[str]:
        return [line.rstrip() for line in s.strip("\n").splitlines()]

    return norm(got) == norm(want)
