"""What an app has loaded: its plugins (hooks, tools) and its agents, as lists for people.

``smarthole plugins`` and ``agents`` build these lists from the disk. A running daemon records
its own in ``daemon.json`` (:meth:`~smarthole.daemon.state.DaemonState.record_loaded`, at start
and after each reload; :func:`~smarthole.daemon.state.recorded` reads them), and with one
running the commands show its lists, each entry marked by :func:`compare` against what the
disk holds now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..app import App
    from ..home import Home

Entry = dict[str, Any]

ENTRY_DESCRIPTION = "the agent you talk to"


def plugin_listing(app: App) -> list[Entry]:
    """Each plugin: its name, where it came from, its hooks and its tools."""
    return [
        {
            "name": info.name,
            "source": info.source,
            "location": info.location,
            "hooks": app.plugins.hook_names(info.name),
            "tools": [
                {"name": t.name, "description": t.summary, "idempotent": t.idempotent}
                for t in app.tools
                if t.plugin == info.name
            ],
        }
        for info in app.plugins.info.values()
    ]


def agent_listing(app: App) -> list[Entry]:
    """The entry agent first, then each team agent with its description, model and tools.

    The entry agent's tools are those of plugins (an MCP server's come and go as it runs), the
    team tools as the teams runner offers them: ``start_task`` last, once a team is configured.
    """
    from ..teams.prompts import FINISH_TASK, START_TASK, TEAM_TOOLS

    config, team = app.config, app.team
    entry_tools = [
        tool.name
        for tool in app.tools
        if tool.plugin in app.plugins.info and tool.name not in TEAM_TOOLS
    ]
    if team and START_TASK in app.tools:
        entry_tools.append(START_TASK)
    listed: list[Entry] = [
        {
            "name": config.agent.name,
            "role": "entry",
            "description": ENTRY_DESCRIPTION,
            "model": config.model.name,
            "tools": entry_tools,
        }
    ]
    for agent in team.values():
        listed.append(
            {
                "name": agent.name,
                "role": "team",
                "description": agent.description,
                "model": agent.model,
                "tools": [
                    *(name for name in agent.tools if name not in TEAM_TOOLS),
                    *([FINISH_TASK] if FINISH_TASK in app.tools else []),
                ],
            }
        )
    return listed


@dataclass(frozen=True)
class Listing:
    """What a listing command shows: the entries, whether they are a running daemon's (marked
    against the disk), and why the disk did not load, if it did not."""

    entries: list[Entry]
    from_daemon: bool = False
    disk_error: str | None = None


def beside_disk(
    home: Home,
    loaded: list[Entry] | None,
    listing: Callable[[App], list[Entry]],
    explain: Callable[[App, Entry, Entry], list[Entry]] | None = None,
) -> Listing:
    """``loaded``, what the running daemon recorded (``state.recorded``), marked by
    :func:`compare` against the ``listing`` of the app the disk loads now; with no daemon
    (``loaded`` is None), the disk's. ``explain(app, loaded_entry, disk_entry)`` says what
    differs in a changed entry (its ``differs``).

    With no daemon running, a disk that does not load raises (``ConfigError``,
    ``PluginError``); with one, the daemon's entries are shown as they are, and why is kept.
    """
    from ..app import App
    from ..errors import ConfigError, PluginError

    try:
        app = App.load(home)
    except (ConfigError, PluginError) as exc:
        if loaded is None:
            raise
        return Listing(loaded, from_daemon=True, disk_error=str(exc))
    try:
        on_disk = listing(app)
        if loaded is None:
            return Listing(on_disk)
        entries = compare(loaded, on_disk)
        if explain is not None:
            disk = {entry["name"]: entry for entry in on_disk}
            for entry, was in zip(entries, loaded, strict=False):
                if entry["changed"]:
                    entry["differs"] = explain(app, was, disk[entry["name"]])
    finally:
        app.close()
    return Listing(entries, from_daemon=True)


def compare(
    loaded: list[Entry],
    on_disk: list[Entry],
    same: Callable[[Entry, Entry], bool] = lambda a, b: a == b,
) -> list[Entry]:
    """The daemon's entries, then those only on disk, each with ``loaded``, ``on_disk`` and
    ``changed`` (on disk, but not as the daemon has it: not ``same``). Entries are matched
    by ``name``."""
    disk = {entry["name"]: entry for entry in on_disk}
    names = {entry["name"] for entry in loaded}
    listed = []
    for entry in loaded:
        now = disk.get(entry["name"])
        changed = now is not None and not same(entry, now)
        listed.append({**entry, "loaded": True, "on_disk": now is not None, "changed": changed})
    for entry in on_disk:
        if entry["name"] not in names:
            listed.append({**entry, "loaded": False, "on_disk": True, "changed": False})
    return listed


def agent_differences(
    loaded_plugins: list[Entry] | None,
) -> Callable[[App, Entry, Entry], list[Entry]]:
    """What differs between an agent the running daemon loaded and the same agent on disk now,
    each difference with where it comes from: config.toml, or a tool's plugin (its file), as
    the disk has it, else as the daemon recorded it (``loaded_plugins``)."""

    def explain(app: App, loaded: Entry, on_disk: Entry) -> list[Entry]:
        from ..teams.prompts import FINISH_TASK, START_TASK

        table = f"config.toml [agents.{loaded['name']}]"
        plugins = {**tool_origins(loaded_plugins or []), **tool_origins(plugin_listing(app))}
        if loaded["role"] == "team":
            sources = {"description": table, "model": table}

            def origin(tool: str) -> str:
                return plugins.get(tool, "?") if tool == FINISH_TASK else f"{table} tools"
        else:
            sources = {"model": "config.toml [model]"}

            def origin(tool: str) -> str:
                if tool == START_TASK:
                    return "config.toml [agents] (a team is configured)"
                return plugins.get(tool, "a plugin no longer loaded")

        differs: list[Entry] = [
            {"what": key, "loaded": loaded.get(key), "on_disk": on_disk.get(key), "from": source}
            for key, source in sources.items()
            if loaded.get(key) != on_disk.get(key)
        ]
        before, now = loaded.get("tools") or [], on_disk.get("tools") or []
        differs += [
            {
                "what": "tool",
                "name": name,
                "loaded": name in before,
                "on_disk": name in now,
                "from": origin(name),
            }
            for name in [*(n for n in now if n not in before), *(n for n in before if n not in now)]
        ]
        return differs

    return explain


def tool_origins(plugins: list[Entry]) -> dict[str, str]:
    """Where each tool of a plugin listing comes from, for people: its plugin and its file."""
    return {
        tool["name"]: f"plugin {plugin['name']} ({plugin['source']}: {plugin['location']})"
        for plugin in plugins
        for tool in plugin.get("tools") or []
        if isinstance(tool, dict) and "name" in tool
    }
