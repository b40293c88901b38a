"""The `Window` reference page for Python users, generated from the code:
its signature (`inspect.signature`), the per-kind constructors' (one per
registered kind, `wid.spec.kinds.KINDS`, named by `Shape.constructor`),
and one row per parameter with its Python type, unit, default, the kinds
that use it and what it means (a kind's parameters as its shape declares
them; the others as the TOML reference describes them,
`tools.docs.toml_reference`).

    python -m tools.docs.window_reference      # prints the page
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import MISSING, Field, fields
from typing import Any

from tools.docs.toml_reference import NOTES, bullets
from wid.spec.kinds import KINDS, kind_fields, kinds_taking
from wid.spec.window import Window


def _type(f: Field[Any], owner: type = Window) -> str:
    hint = typing.get_type_hints(owner).get(f.name, f.type)
    text = str(hint).replace("typing.", "").replace("wid.spec.aggregation.", "").replace("wid.spec.window.", "")
    text = text.replace("<class '", "").replace("'>", "")
    if f.name.endswith("_ms"):
        text += " or timedelta" + (" or datetime" if f.name == "landmark_ms" else "")
    return f"`{text}`".replace("|", "\\|")


def _unit(name: str) -> str:
    if name == "landmark_ms":
        return "epoch ms; or text as `landmark=\"2024-05-01 00:00:00\"`"
    if name.endswith("_ms"):
        return f"ms; or text as `{name[:-3]}=\"5 minutes\"`"
    return "rows" if name.endswith("_rows") else ""


def _default(f: Field[Any]) -> str:
    if f.default is not MISSING:
        return f"`{f.default!r}`"
    if f.default_factory is not MISSING:
        return f"`{f.default_factory()!r}`"
    return "required"


def _kinds(name: str) -> str:
    if name not in kind_fields():
        return "all"
    required = [k for k, kind in KINDS.items() if name in kind.required]  # a kind's own: see its shape
    taking = [f"{k} (required)" if k in required else k for k in kinds_taking(name)]
    return ", ".join(taking)


def _param(p: inspect.Parameter) -> str:
    """A parameter as its source writes it: ``name: type = default``."""
    star = "**" if p.kind is inspect.Parameter.VAR_KEYWORD else ""
    note = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", str(p.annotation))
    text = f"{star}{p.name}: {note}"
    return text if p.default is inspect.Parameter.empty else f"{text} = {p.default!r}"


def signature(owner: Any, name: str) -> str:
    """``name(param, ...)``, one parameter a line."""
    params = [_param(p) for p in inspect.signature(owner).parameters.values() if p.name != "self"]
    return f"{name}(\n" + "".join(f"    {p},\n" for p in params) + ")"


def page() -> str:
    """The whole page, as Markdown."""
    docs = {**bullets(Window.__doc__), **NOTES[Window]}
    lines = [
        "# Window parameters",
        "",
        "`Window` is the one declaration of a windowed aggregation, in Python and (as "
        "`[transform.window]`) in TOML. This page is generated from the code each time the site is built "
        "(`tools/docs/window_reference.py`).",
        "",
        "Every `*_ms` field takes milliseconds (an `int`), a `datetime.timedelta` (`landmark_ms`: a "
        "`datetime`), or, under its name without `_ms`, the text TOML takes: `Window(duration=\"5 minutes\")`, "
        "`lateness=\"30 seconds\"`, `landmark=\"2024-05-01 00:00:00\"`, `max_future=\"off\"`. A field a kind does "
        "not use is refused, naming the kinds that do. Errors are `wid.ConfigError`, naming the field and the fix.",
        "",
        "## Signature",
        "",
        "```text",
        signature(Window, "Window"),
        "```",
        "",
        "One constructor per kind takes that kind's fields and the fields every kind shares (`**common`):",
        "",
        "```text",
        *[signature(getattr(Window, k.constructor), f"Window.{k.constructor}") for k in KINDS.values()],
        "```",
        "",
        "## Fields",
        "",
        "| parameter | type | unit | default | kinds | description |",
        "|---|---|---|---|---|---|",
    ]
    lines.append(f"| `kind` | `str` |  | required | all | {docs['kind']} One of {', '.join(KINDS)}. |")
    for name in kind_fields():  # each kind's parameters, as its shape declares them
        owner = KINDS[kinds_taking(name)[0]]
        f = next(f for f in fields(owner) if f.name == name)
        desc = owner.descriptions.get(name, "").replace("\n", " ")
        lines.append(f"| `{name}` | {_type(f, owner)} | {_unit(name)} | {_default(f)} | {_kinds(name)} | {desc} |")
    for f in fields(Window):
        if not f.init:
            continue
        desc = docs.get(f.name, "").replace("\n", " ")
        lines.append(f"| `{f.name}` | {_type(f)} | {_unit(f.name)} | {_default(f)} | {_kinds(f.name)} | {desc} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(page())
