"""Reloading ``config.toml`` in a running daemon (SIGHUP, ``smarthole reload``).

The whole ``Config`` is read again and swapped into the ``App`` in one assignment; turns read
``app.config`` when they start, so new settings apply to the turns that start afterwards and
in-flight turns finish with the values they began with. Anything that hangs off ``Config`` is
re-read the same way, tables added later included, unless it is listed in ``RESTART_ONLY``.

Settings in ``RESTART_ONLY`` are built into long-lived objects at start (the worker threads,
the watcher, the model client, the plugin list): a change to one of them is logged as needing
a restart, and the running value is kept, so ``app.config`` always says what the daemon really
does. What a reload can apply beyond settings, it does: a new file in a plugin folder is
loaded (settings, tools, message commands, ``startup``), and the MCP servers follow ``[mcp]``
(added ones start, removed ones stop, changed ones restart, each after its calls in flight).
A plugin file that changed or went away needs a restart, and is named as one. A config that
does not load (bad TOML, a bad key, a plugin's settings that do not validate, an unset
``${VAR}``, a new plugin that does not import) is logged as one error and changes nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..app import App
from ..config import Config, load_config
from ..formats import iso
from ..plugins import folder_plugin_files

if TYPE_CHECKING:
    from ..formats import Clock
    from ..mcpservers import McpServers
    from .state import DaemonState

logger = logging.getLogger(__name__)

# table -> the keys that need a restart, or None for the whole table.
RESTART_ONLY: dict[str, tuple[str, ...] | None] = {
    "daemon": ("workers",),
    "inbox": None,
    "model": None,
    "titles": None,
    "workspace": None,
    "plugins": ("paths", "enabled", "disabled"),
    "conversation": ("max_tool_iterations",),
}


def keep_restart_only(old: Config, new: Config) -> tuple[Config, list[str]]:
    """``new`` with every restart-only value taken from ``old``; and the names of those changed.

    Returns the config to apply and ``["[daemon] workers", ...]`` for each ignored change.
    """
    changed: list[str] = []
    replaced: dict[str, Any] = {}
    for table, keys in RESTART_ONLY.items():
        old_table, new_table = getattr(old, table), getattr(new, table)
        names = keys or tuple(f.name for f in dataclasses.fields(old_table))
        moved = [k for k in names if getattr(old_table, k) != getattr(new_table, k)]
        if moved:
            changed.extend(f"[{table}] {key}" for key in moved)
            kept = {k: getattr(old_table, k) for k in moved}
            replaced[table] = dataclasses.replace(new_table, **kept)
    return dataclasses.replace(new, **replaced), changed


@dataclass(frozen=True)
class Reloaded:
    """What a reload did: ``applied`` live, and what takes effect only after a restart."""

    applied: list[str]
    restart: list[str]


def reload_config(
    app: App, mcp: McpServers | None = None, *, loaded_at: float = 0.0
) -> Reloaded | None:
    """Read ``config.toml`` and the plugin folders again and apply what can be; None (nothing
    changed) if the new configuration is invalid. ``loaded_at`` (a ``time.time()``) is when
    the running plugins were read: a plugin file changed since needs a restart."""
    from ..errors import ConfigError, PluginError

    try:
        config, restart = keep_restart_only(app.config, load_config(app.home))
        change = mcp.prepare(config.mcp) if mcp is not None else None
        new, restart_plugins = plugin_changes(app, loaded_at)
        if new:
            app.add_plugins(new)
            _add_message_commands(app, list(new))
        app.reconfigure(config)
    except (ConfigError, PluginError) as exc:
        logger.error("reload failed; keeping the running configuration: %s", exc)
        return None
    applied = [f"plugin {name} loaded ({path})" for name, path in new.items()]
    applied += change.apply() if change else []
    restart += restart_plugins
    for line in applied:
        logger.info("reload: %s", line)
    for name in restart:
        logger.warning("%s changed; it takes effect after a restart", name)
    logger.info("configuration reloaded from %s", app.home.config_file)
    return Reloaded(applied, restart)


def _add_message_commands(app: App, names: list[str]) -> None:
    """The message commands of plugins loaded by this reload join the running registry (one
    not built yet collects every plugin's when it is)."""
    from ..pipeline.commands import collect_commands
    from .runtime import Runtime

    root = Runtime.of(app)
    if "message_commands" in vars(root):  # built: every holder of it sees the new ones
        collect_commands(app, root.message_commands, only=names)


def plugin_changes(app: App, loaded_at: float) -> tuple[dict[str, Path], list[str]]:
    """The new plugin files to load now, and the plugin files that need a restart."""
    settings = app.config.plugins  # the folders the daemon runs with (changing them: restart)
    on_disk = folder_plugin_files(
        home_root=app.home.root,
        folders=settings.paths,
        enabled=settings.enabled,
        disabled=settings.disabled,
    )
    loaded = app.plugins.folder_plugins()
    new = {name: path for name, path in on_disk.items() if name not in loaded}
    restart = [f"plugin file {path} (removed)" for n, path in loaded.items() if n not in on_disk]
    for name, path in loaded.items():
        with contextlib.suppress(OSError):
            if name in on_disk and path.stat().st_mtime > loaded_at:
                restart.append(f"plugin file {path} (changed)")
    return new, restart


def reload_daemon(
    app: App, mcp: McpServers | None, state: DaemonState, loaded_at: float, clock: Clock
) -> bool:
    """A running daemon's reload: apply what can be, and record in ``daemon.json`` when, and
    what needs a restart (kept until one, so ``status`` goes on saying it)."""
    done = reload_config(app, mcp, loaded_at=loaded_at)
    if done is None:
        return False
    restart = sorted({*state.data.get("restart_needed", []), *done.restart})
    state.update(reloaded_at=iso(clock()), restart_needed=restart)
    return True
