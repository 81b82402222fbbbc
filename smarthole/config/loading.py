"""Reading ``config.toml`` into a ``Config``: every bad key reported in one ``ConfigError``."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ConfigError
from ..formats import dumps_toml, loads_toml
from ..home import Home
from .settings import SECTIONS, Config

T = TypeVar("T")

# Tables whose keys name things ([agents.<name>], [mcp.servers.<name>]) rather than settings.
# Each parser takes the table and the error list and returns the value of the ``Config`` field
# of the same name; it appends one message per bad key, named as ``[table.name] key``.
NamedTableParser = Callable[[dict[str, Any], list[str]], Any]
NAMED_TABLES: dict[str, NamedTableParser] = {}


def load_config(home: Home) -> Config:
    """Read ``config.toml`` from ``home``; a missing file means all defaults."""
    path = home.config_file
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    return parse_config(loads_toml(text, source=str(path)), source=str(path))


def parse_config(data: dict[str, Any], *, source: str = "config.toml") -> Config:
    errors: list[str] = []
    sections: dict[str, Any] = {}
    plugin_tables: dict[str, dict[str, Any]] = {}
    for name, value in data.items():
        if name not in SECTIONS and name not in NAMED_TABLES:
            errors.append(f"unknown table [{name}]")
            continue
        if not isinstance(value, dict):
            errors.append(f"[{name}] must be a table")
            continue
        if name in NAMED_TABLES:
            sections[name] = NAMED_TABLES[name](value, errors)
            continue
        if name == "plugins":
            value = dict(value)
            plugin_tables = {k: value.pop(k) for k in list(value) if isinstance(value[k], dict)}
        sections[name] = build_settings(SECTIONS[name], value, f"[{name}]", errors)
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(errors))
    return Config(**sections, plugin_tables=plugin_tables)


def build_settings(cls: type[T], table: dict[str, Any], where: str, errors: list[str]) -> T:
    """Build dataclass ``cls`` from a TOML table, appending one message per bad key."""
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            errors.append(f"{where} unknown key {key!r}")
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


# -- writing ---------------------------------------------------------------------------------


def default_config_data(plugin_paths: list[str] | None = None) -> dict[str, Any]:
    """Every setting with its default, as a TOML-ready dict."""
    data: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        data[name] = dataclasses.asdict(cls())
    if plugin_paths is not None:
        data["plugins"]["paths"] = plugin_paths
    return data


def example_config_text(plugin_paths: list[str] | None = None) -> str:
    """The commented example (``config.example.toml``, shipped as ``example.toml``).

    It is used when it holds exactly the defaults asked for; otherwise (a different plugin
    path, or an installation without the file) the bare keys with their defaults.
    """
    from importlib.resources import files

    defaults = default_config_data(plugin_paths)
    try:
        text = files(__package__).joinpath("example.toml").read_text(encoding="utf-8")
        if loads_toml(text, source="example.toml") == defaults:
            return text
    except (OSError, ConfigError):
        pass
    return dumps_toml(defaults)


def write_default_config(
    home: Home, *, plugin_paths: list[str] | None = None, force: bool = False
) -> bool:
    """Write ``config.toml`` as the commented example. Returns True if written.

    An existing file is never overwritten, unless ``force``: then it is kept as
    ``config.toml.bak`` first.
    """
    from ..fsutil import atomic_write

    data = example_config_text(plugin_paths).encode()
    path = home.config_file
    if force and path.exists():
        atomic_write(path.with_name(path.name + ".bak"), path.read_bytes())
        atomic_write(path, data)
        return True
    if path.exists():
        return False
    try:
        atomic_write(path, data, exclusive=True)
    except FileExistsError:
        return False
    return True
