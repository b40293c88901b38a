"""The keyword parameters of `wid.spec.window.Window` and of its per-kind
constructors (``Window.tumbling(...)``): which parameter goes to the
Window and which to its kind's shape (`route`), and their signatures
(`window_signature`, `constructor_signature`), made from the registry
(`wid.spec.kinds.KINDS`) so that a kind's parameters, and the text form of
each ``*_ms`` one (``duration="5 minutes"``), are real keyword parameters,
shown by `inspect.signature` and the generated parameter page.

A parameter no kind and no Window takes is refused with the closest one
(``difflib``), as the TOML loader refuses an unknown key.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable
from dataclasses import Field, fields
from typing import Any

from wid.errors import ConfigError
from wid.spec.durations import INSTANTS, read_text_key
from wid.spec.field_rules import default_of
from wid.spec.kinds import KINDS, Shape, kind_default, kind_fields, kinds_taking, shape_of

Params = dict[str, Any]
EMPTY = inspect.Parameter.empty


def twin(name: str) -> str | None:
    """The text form of parameter `name` (``duration`` for ``duration_ms``), or None."""
    return name[:-3] if name.endswith("_ms") else None


def with_twins(names: Iterable[str]) -> list[str]:
    """`names`, each ``*_ms`` one followed by its text form."""
    return [n for name in names for n in (name, twin(name)) if n]


def owner_of(name: str) -> str:
    """The parameter `name` stands for: the ``*_ms`` field of a text form, else itself."""
    return f"{name}_ms" if f"{name}_ms" in (*kind_fields(), *_common_names()) else name


def _common(window_type: type) -> list[Field[Any]]:
    return [f for f in fields(window_type) if f.init and f.name != "shape"]


_WINDOW: list[type] = []  # the Window class, once defined (`register_window`)


def register_window(window_type: type) -> None:
    """Tell the routing which class is `Window` (its fields are the common parameters)."""
    _WINDOW[:] = [window_type]


def _common_names() -> list[str]:
    return [f.name for f in _common(_WINDOW[0])] if _WINDOW else []


def known_names() -> list[str]:
    """Every parameter a Window takes, with the text forms: ``kind``, every
    kind's, the common ones, ``shape``."""
    return ["kind", *with_twins(kind_fields()), *with_twins(_common_names()), "shape"]


def unknown(name: str, known: Iterable[str], problem: str = "unknown key") -> ConfigError:
    """ConfigError for an unknown parameter `name`, with the closest of `known`."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return ConfigError(name, problem, f"did you mean '{close[0]}'?" if close else "remove it")


def route(kind: object, given: Params) -> tuple[Shape, Params, tuple[tuple[str, object], ...]]:
    """Split a Window's keyword parameters `given` (and its `kind`, or a
    ``shape`` among them) into its shape (made, or the given one with the
    kind's parameters given beside it replaced), its common parameters (the
    text forms read, `read_text_key`) and the text forms as written. A
    parameter of another kind at its default (None, say) is left out; set,
    it is refused naming the kinds that take it. Raises ConfigError."""
    shape = given.pop("shape", None)
    if shape is not None and not isinstance(shape, Shape):
        raise ConfigError("shape", f"must be a window shape (a kind's parameters), got {shape!r}")
    if kind is None and shape is None:
        raise ConfigError("kind", "missing", "give kind='tumbling' (or another kind), or use Window.tumbling(...)")
    cls = shape_of(kind if kind is not None else shape.kind)  # type: ignore[union-attr]
    if shape is not None and shape.kind != cls.kind:
        raise ConfigError("kind", f"kind = '{cls.kind}' but the shape given is a {shape.kind} window's")
    common = set(_common_names())
    own: Params = {}
    mine: Params = {}
    texts: list[tuple[str, object]] = []
    for name, value in given.items():
        field = owner_of(name)
        if field != name and given.get(field) is not None:
            raise ConfigError(name, f"is given twice, as {name} and {field}", "keep one of them")
        if field in common:
            if field != name:
                field, value, keep = read_text_key(name, value)
                texts += [(name, given[name])] if keep else []
            own[field] = value
        elif field in cls.fields:
            mine[name] = value
        elif field in kind_fields():
            if value is None or value == kind_default(field):
                continue  # unset: a flat form may name every kind's parameters
            raise ConfigError(name, f"is not used by kind = '{cls.kind}' (only by {', '.join(kinds_taking(field))})",
                              f"remove `{name}`")
        else:
            raise unknown(name, known_names(), "is not a parameter of Window")
    return _shape(cls, shape, mine), own, tuple(texts)


def _shape(cls: type[Shape], shape: Shape | None, mine: Params) -> Shape:
    """`cls`'s shape from its parameters `mine`, over `shape`'s if given."""
    if shape is None:
        return cls(**mine)
    if not mine:
        return shape
    base = {n: getattr(shape, n) for n in cls.fields}
    for name in mine:  # a text form replaces its field and the field's months twin
        for replaced in (f"{name}_ms", f"{name}_months"):
            base.pop(replaced, None)
    return cls(**{**base, **mine})


def _hint(cls: type, name: str) -> str:
    hints = {f.name: f.type for f in fields(cls)}
    return str(hints.get(name, "Any"))


def _twin_hint(field: str) -> str:
    return "str | datetime | None" if field in INSTANTS else "str | timedelta | None"


def _param(name: str, kind: Any, owner: type, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, kind, default=default, annotation=_hint(owner, name))


def _parameters(names: Iterable[str], owner: type, kind: Any) -> list[inspect.Parameter]:
    out = []
    for f in [f for f in fields(owner) if f.name in set(names)]:
        default = default_of(f)
        out.append(_param(f.name, kind, owner, EMPTY if default is inspect.Parameter.empty else default))
        if twin(f.name):
            out.append(inspect.Parameter(twin(f.name), kind, default=None,  # type: ignore[arg-type]
                                         annotation=_twin_hint(f.name)))
    return out


def _ordered(cls: type[Shape], names: Iterable[str]) -> list[inspect.Parameter]:
    """`cls`'s parameters `names`, in its own order (`Shape.fields`), with their text forms."""
    by_name = {p.name: p for p in _parameters(cls.fields, cls, inspect.Parameter.KEYWORD_ONLY)}
    return [by_name[n] for name in names for n in (name, twin(name)) if n and n in by_name]


def window_signature(window_type: type) -> inspect.Signature:
    """``Window(kind, ...)``: the kind, every kind's parameters (each
    once, with its text form), the common ones (with theirs), ``shape``."""
    params = [inspect.Parameter("kind", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="WindowKind")]
    seen: set[str] = set()
    for cls in KINDS.values():
        params += [p for p in _ordered(cls, [n for n in cls.fields if n not in seen])]
        seen |= set(cls.fields)
    params += _parameters(_common_names(), window_type, inspect.Parameter.KEYWORD_ONLY)
    params.append(inspect.Parameter("shape", inspect.Parameter.KEYWORD_ONLY, default=None,
                                    annotation="Shape | None"))
    return inspect.Signature(params, return_annotation="None")


def constructor_signature(cls: type[Shape], window_type: type) -> inspect.Signature:
    """``Window.<kind>(...)``: its positional parameters, its other
    parameters and the common ones, keyword only, each with its text form."""
    params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
              for p in _ordered(cls, cls.positional) if p.name in cls.positional]
    params += [p for p in _ordered(cls, cls.fields) if p.name not in cls.positional]
    params += _parameters(_common_names(), window_type, inspect.Parameter.KEYWORD_ONLY)
    return inspect.Signature(params, return_annotation="Window")


def constructor_params(cls: type[Shape], args: tuple[Any, ...], given: Params) -> Params:
    """The Window parameters of ``Window.<kind>(*args, **given)``: its
    positional ones named, each checked to be one of the kind's or a common
    one. Raises ConfigError for another kind's parameter (or ``kind``), and
    TypeError for too many positional arguments, as Python does."""
    if len(args) > len(cls.positional):
        raise TypeError(f"Window.{cls.constructor}() takes {len(cls.positional)} positional arguments "
                        f"({', '.join(cls.positional)}), {len(args)} were given")
    for name, value in zip(cls.positional, args, strict=False):
        if name in given:
            raise TypeError(f"Window.{cls.constructor}() got {name} twice")
        given[name] = value
    mine = set(with_twins(cls.fields)) | set(with_twins(_common_names()))
    for name in given:
        if name in mine:
            continue
        field = owner_of(name)
        owners = ", ".join(kinds_taking(field))
        if name == "kind" or owners:
            raise ConfigError(name, f"is not a field of {cls.kind} windows (it is one of {owners or 'no kind'})",
                              f"Window.{cls.constructor}() takes {', '.join(cls.fields)} and the fields every kind "
                              "shares")
        raise unknown(name, sorted(mine), f"is not a parameter of Window.{cls.constructor}()")
    return {k: v for k, v in given.items() if v is not None or k not in cls.fields}


__all__ = ["constructor_params", "constructor_signature", "known_names", "owner_of", "register_window", "route",
           "twin", "unknown", "window_signature", "with_twins"]
