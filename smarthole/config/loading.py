"""Reading ``config.toml`` into a ``Config``: every bad key reported in one ``ConfigError``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ConfigError
from ..formats import dumps_toml, loads_toml
from ..home import Home
from .channels import parse_channels
from .fields import build_settings, closest
from .mcp import parse_mcp
from .prices import parse_prices
from .schedules import check_schedule_agents, parse_schedules
from .settings import SECTIONS, AgentSettings, Config
from .teams import check_entry_name, parse_agents

T = TypeVar("T")

# Tables whose keys name things ([agents.<name>], [mcp.servers.<name>]) rather than settings.
# Each parser takes the table and the error list and returns the value of the ``Config`` field
# of the same name; it appends one message per bad key, named as ``[table.name] key``.
NamedTableParser = Callable[[dict[str, Any], list[str]], Any]
NAMED_TABLES: dict[str, NamedTableParser] = {
    "agents": parse_agents,
    "mcp": parse_mcp,
    "prices": parse_prices,
    "channels": parse_channels,
}


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
        if name == "schedules":
            sections[name] = parse_schedules(value, errors)
            continue
        if name not in SECTIONS and name not in NAMED_TABLES:
            close = closest(name, [*SECTIONS, *NAMED_TABLES, "schedules"])
            errors.append(
                f"unknown table [{name}]" + (f" (did you mean [{close}]?)" if close else "")
            )
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
    entry = sections.get("agent")
    check_entry_name(
        entry.name if entry else AgentSettings().name, sections.get("agents", {}), errors
    )
    check_schedule_agents(sections.get("schedules", ()), sections.get("agents", {}), errors)
    if errors:
        raise ConfigError(f"{source}: " + "; ".join(errors))
    return Config(**sections, plugin_tables=plugin_tables)


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


def set_up_home(home: Home, *, force: bool = False) -> bool:
    """The folders and commented config.toml of a new home (``init``, a kept demo); returns
    whether the config was written (an existing one stays unless ``force``)."""
    home.ensure()
    (home.root / "plugins").mkdir(exist_ok=True)
    return write_default_config(home, plugin_paths=["plugins"], force=force)


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
