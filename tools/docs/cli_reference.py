"""The CLI reference page, generated from the typer app (`wid.cli.app`):
every command, its help text, arguments and options, read from the same
objects ``wid COMMAND --help`` prints, so the page follows the code.

    python -m tools.docs.cli_reference      # prints the page
"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path
from typing import Any

import typer

from wid.cli import app


def _type_words(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Annotated:
        return _type_words(args[0])
    if args and typing.get_origin(hint) is not None:
        return _type_words(args[0])
    return {Path: "path", str: "text", int: "integer", bool: "flag", float: "number"}.get(hint, "value")


def _signature_types(callback: Any) -> dict[str, str]:
    hints = typing.get_type_hints(callback, include_extras=True)
    return {name: _type_words(hints[name]) for name in inspect.signature(callback).parameters if name in hints}


def commands() -> list[dict[str, Any]]:
    """Each command as a dict: name, help, and its parameters (name, kind,
    type, default, help, required), in the order ``--help`` lists them."""
    group = typer.main.get_command(app)
    callbacks = {(c.name or c.callback.__name__.replace("_", "-")): c.callback
                 for c in app.registered_commands if c.callback is not None}
    out = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        types = _signature_types(callbacks[name]) if name in callbacks else {}
        params = []
        for p in command.params:
            argument = not p.opts[0].startswith("-")
            params.append({
                "name": p.name if argument else ", ".join([*p.opts, *p.secondary_opts]),
                "argument": argument,
                "type": types.get(p.name or "", "value"),
                "default": p.default,
                "help": getattr(p, "help", None) or "",
                "required": bool(p.required),
            })
        out.append({"name": name, "help": inspect.cleandoc(command.help or ""), "params": params})
    return out


def _default(p: dict[str, Any]) -> str:
    if p["required"]:
        return "**required**"
    if p["type"] == "flag" or p["default"] in (None, False):
        return ""
    return f"`{p['default']}`"


def page() -> str:
    """The whole reference page, as Markdown."""
    group = typer.main.get_command(app)
    lines = ["# CLI reference", "",
             "The `wid` command, generated from its typer app (`wid.cli`) each time the site is built "
             "(`tools/docs/cli_reference.py`). `wid COMMAND --help` prints the same.", "",
             inspect.cleandoc(group.help or ""), "",
             "Errors you can cause print one to three lines (what, where, the fix) and exit with status 2; "
             "`--debug` shows the stack trace instead.", ""]
    for c in commands():
        usage = " ".join(["wid", c["name"], "[OPTIONS]", *(p["name"].upper() for p in c["params"] if p["argument"])])
        lines += [f"## `wid {c['name']}`", "", c["help"], "", "```text", usage, "```", "",
                  "| argument or option | type | default | meaning |", "|---|---|---|---|"]
        for p in c["params"]:
            name = p["name"].upper() if p["argument"] else p["name"]
            text = p["help"].replace("|", "\\|")
            lines.append(f"| `{name}` | {p['type']} | {_default(p)} | {text} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(page())
