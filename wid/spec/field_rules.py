"""What a field of a `Window` or of a window kind's shape must hold, declared
beside the field, and checked by one function (`check_fields`).

A field declares its rule in its metadata: `positive` (an integer above 0),
`not_negative` (an integer, 0 or more), `integer` (any integer: a phase, an
instant), `column` (a column name), `columns` (a list of them),
`identifier` (a name wid writes to a database). A field typed with
`typing.Literal` may hold only its values. So the checks follow the
fields, with no list of which fields are numbers kept by hand.
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, Field, field, fields
from typing import Any

from wid.errors import ConfigError
from wid.spec.names import check_identifier, check_name, check_names

RULE = "wid_rule"  # the metadata key of a field's rule


def _ruled(rule: str, default: Any, doc: str) -> Any:
    return field(default=default, metadata={RULE: rule, "doc": doc})


def positive(default: Any = None, doc: str = "", also: tuple[object, ...] = ()) -> Any:
    """A field holding an integer above 0 (or None, where that is its
    default), or one of the values `also` (a sentinel of its own)."""
    return field(default=default, metadata={RULE: "positive", "doc": doc, "also": also})


def not_negative(default: Any = None, doc: str = "") -> Any:
    """A field holding an integer, 0 or more."""
    return _ruled("not_negative", default, doc)


def integer(default: Any = None, doc: str = "") -> Any:
    """A field holding any integer (a phase, an instant)."""
    return _ruled("integer", default, doc)


def column(default: Any = None, doc: str = "") -> Any:
    """A field holding a column name."""
    return _ruled("column", default, doc)


def columns(doc: str = "") -> Any:
    """A field holding column names (a tuple; a list or one name is taken)."""
    return _ruled("columns", (), doc)


def identifier(default: Any = None, doc: str = "") -> Any:
    """A field holding a name wid writes to a database."""
    return _ruled("identifier", default, doc)


def text(default: Any = None, doc: str = "") -> Any:
    """A field with no rule of its own (its owner checks it), with its description."""
    return field(default=default, metadata={"doc": doc})


def default_of(f: Field[Any]) -> Any:
    """`f`'s default value (MISSING when it has none)."""
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else MISSING


_CHOICES: dict[type, dict[str, tuple[object, ...]]] = {}


def _choices(cls: type) -> dict[str, tuple[object, ...]]:
    """The values of each `Literal`-typed field of `cls` (None allowed where the type allows it)."""
    if cls in _CHOICES:
        return _CHOICES[cls]
    out = {}
    for name, hint in typing.get_type_hints(cls).items():
        args = typing.get_args(hint)
        literal = hint if typing.get_origin(hint) is typing.Literal else next(
            (a for a in args if typing.get_origin(a) is typing.Literal), None)
        if literal is not None:
            out[name] = typing.get_args(literal) + ((None,) if type(None) in args else ())
    _CHOICES[cls] = out
    return out


def check_fields(obj: Any) -> None:
    """Check every field of the dataclass `obj` against its rule and its
    `Literal` values, in field order; normalise column lists to tuples.
    Raises ConfigError naming the field."""
    choices = _choices(type(obj))
    for f in fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        if f.name in choices and value not in choices[f.name]:
            allowed = ", ".join(str(c) for c in choices[f.name] if c is not None)
            raise ConfigError(f.name, f"must be one of {allowed}; got {value!r}")
        rule = f.metadata.get(RULE)
        if rule == "columns":
            object.__setattr__(obj, f.name, check_names(f.name, value))
        elif value is None or value in f.metadata.get("also", ()):
            continue
        elif rule in ("positive", "not_negative", "integer"):
            _check_number(f.name, value, rule)
        elif rule == "column":
            check_name(f.name, value)
        elif rule == "identifier":
            check_identifier(f.name, value)


def _check_number(name: str, value: object, rule: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        hint = f'; give text as {name[:-3]}="{value}"' if isinstance(value, str) and name.endswith("_ms") else ""
        raise ConfigError(name, f"must be an integer, got {value!r}{hint}")
    if rule == "positive" and value <= 0:
        raise ConfigError(name, f"must be positive, got {value}")
    if rule == "not_negative" and value < 0:
        raise ConfigError(name, f"must not be negative, got {value}")


def description(f: Field[Any]) -> str:
    """What field `f` means, as its declaration says (its ``doc``)."""
    return str(f.metadata.get("doc", ""))


__all__ = ["RULE", "check_fields", "column", "columns", "default_of", "description", "identifier", "integer",
           "not_negative", "positive", "text"]
