"""Settings fields: ``setting()`` declares one, ``build_settings`` fills a dataclass of them.

Each bad key becomes one message in the caller's error list, named as ``[table] key``; an
unknown one says which known key it is probably a typo of.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from dataclasses import field
from typing import Any, TypeVar

T = TypeVar("T")


def setting(default: Any, doc: str, *, minimum: float | None = None) -> Any:
    """A dataclass field carrying its documentation and lower bound as metadata."""
    metadata = {"doc": doc, "minimum": minimum}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def build_settings(cls: type[T], table: dict[str, Any], where: str, errors: list[str]) -> T:
    """Build dataclass ``cls`` from a TOML table, appending one message per bad key."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            errors.append(f"{where} unknown key {key!r}{did_you_mean(key, known)}")
            continue
        problem = _check_value(value, hints[key], known[key].metadata.get("minimum"))
        if problem:
            errors.append(f"{where} {key} {problem}")
        else:
            values[key] = float(value) if hints[key] is float else value
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a plugin's own __post_init__ validation
        errors.append(f"{where} {exc}")
        return cls()


def closest(name: str, known: Iterable[str]) -> str | None:
    """The known name ``name`` is most likely a typo of, if one is close enough."""
    import difflib  # only a typo needs it

    close = difflib.get_close_matches(name, list(known), n=1)
    return close[0] if close else None


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'max_tokens'?)`` when a known key is close to ``key``; else ``""``."""
    close = closest(key, known)
    return f" (did you mean {close!r}?)" if close else ""


def _check_value(value: Any, hint: Any, minimum: float | None) -> str | None:
    """Why ``value`` does not fit the type ``hint``, or None when it does."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [h for h in typing.get_args(hint) if h is not type(None)]
        return (
            None
            if any(_check_value(value, h, minimum) is None for h in options)
            else (f"has the wrong type (got {value!r})")
        )
    if hint is bool:
        return None if isinstance(value, bool) else f"must be true or false (got {value!r})"
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer (got {value!r})"
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number (got {value!r})"
    elif hint is str:
        return None if isinstance(value, str) else f"must be a string (got {value!r})"
    elif origin is list:
        (item,) = typing.get_args(hint) or (Any,)
        if not isinstance(value, list) or (
            item is str and not all(isinstance(v, str) for v in value)
        ):
            return f"must be a list of strings (got {value!r})"
        return None
    elif origin is dict or hint is dict:
        return None if isinstance(value, dict) else f"must be a table (got {value!r})"
    else:
        return None
    if minimum is not None and value < minimum:
        return f"must be at least {minimum:g} (got {value!r})"
    return None
