"""Reloading ``config.toml`` in a running daemon (SIGHUP, ``smarthole reload``).

The whole ``Config`` is read again and swapped into the ``App`` in one assignment; turns read
``app.config`` when they start, so new settings apply to the turns that start afterwards and
in-flight turns finish with the values they began with. Anything that hangs off ``Config`` is
re-read the same way, tables added later included, unless it is listed in ``RESTART_ONLY``.

Settings in ``RESTART_ONLY`` are built into long-lived objects at start (the worker threads,
the watcher, the model client, the tools, the plugin list): a change to one of them is logged
as needing a restart, and the running value is kept, so ``app.config`` always says what the
daemon really does. A config that does not load (bad TOML, a bad key, a plugin's settings that
do not validate) is logged as one error and changes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ..app import App
from ..config import Config, load_config

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


def reload_config(app: App) -> bool:
    """Read ``config.toml`` again and apply it; False (old config kept) if it is invalid."""
    from ..errors import ConfigError

    try:
        applied, restart = keep_restart_only(app.config, load_config(app.home))
        app.reconfigure(applied)
    except ConfigError as exc:
        logger.error("reload failed; keeping the running configuration: %s", exc)
        return False
    for name in restart:
        logger.warning("%s changed; it takes effect after a restart", name)
    logger.info("configuration reloaded from %s", app.home.config_file)
    return True
