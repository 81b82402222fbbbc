"""The MCP servers of a home, by hand: what ``smarthole mcp list`` and ``mcp call`` do.

Both work without a running daemon: they start the servers themselves for as long as the
command runs. ``list`` shows a running daemon's own view instead, as it recorded it.
(``cli.commands.mcp`` declares the commands and reads their flags.)
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..errors import DocumentError, ExitCode, LookupFailed, UsageError
from ..formats import loads_json
from .common import daemon_pid, rooted
from .render import server_lines

if TYPE_CHECKING:
    from ..home import Home


def server_views(home: Home) -> list[dict[str, Any]]:
    """Each configured server's state and tools: the running daemon's (marked where
    config.toml now differs), else started here."""
    if daemon_pid(home) is None:
        return _fresh_views(home)
    return _beside_config(home, _running_views(home))


def call(home: Home, server: str, tool_name: str, arguments: dict[str, Any]) -> int:
    """Start ``server``, call its tool ``tool_name`` and print the result; the exit code."""
    from ..app import App
    from ..mcpservers import McpServers, ServerState, exposed_name

    app = App.load(home)
    try:
        if server not in app.config.mcp.servers:
            raise LookupFailed(f"no MCP server named {server!r} in config.toml")
        servers = McpServers(app.config.mcp, app.home, app.tools, os.environ, only=server)
        servers.start()
        try:
            (view,) = servers.views()
            if view.state is not ServerState.READY:
                print("\n".join(server_lines([view.as_dict()], tools=False)), file=sys.stderr)
                return ExitCode.FAILED
            name = tool_name if "__" in tool_name else exposed_name(server, tool_name)
            tool = app.tools.get(name)
            if tool is None or tool.plugin != f"mcp:{server}":
                offered = ", ".join(t["server_tool"] for t in view.tools) or "none"
                raise LookupFailed(f"server {server} has no tool {tool_name!r} ({offered})")
            result = tool.call(arguments, None)
        finally:
            servers.stop()
    finally:
        app.close()
    for block in result.blocks:
        if block["type"] == "image":
            source = block["source"]
            print(f"[image {source['media_type']}, {len(source['data']) * 3 // 4} bytes]")
    print(result.text)
    return ExitCode.FAILED if result.is_error else ExitCode.OK


def _running_views(home: Home) -> list[dict[str, Any]]:
    """A running daemon's servers as it recorded them."""
    from ..mcpservers import recorded_views

    with rooted(home) as root:
        return recorded_views(root.store.plugin_data("mcp"))


def _beside_config(home: Home, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The daemon's ``views``, marked against the servers of config.toml as it is now (how
    each is reached, and whether it is enabled); a config that does not load is said on
    stderr, and the views are shown as they are."""
    from ..config import load_config
    from ..daemon.loaded import compare
    from ..errors import ConfigError
    from ..mcpservers import ServerState

    try:
        servers = load_config(home).mcp.servers
    except ConfigError as exc:
        print(f"smarthole: {exc} (the next start would fail)", file=sys.stderr)
        return views
    configured = [
        {
            "name": name,
            "transport": server.transport,
            "target": server.describe(),
            "state": ServerState.NOT_STARTED if server.enabled else ServerState.DISABLED,
        }
        for name, server in servers.items()
    ]
    return compare(views, configured, _same_server)


def _same_server(running: dict[str, Any], configured: dict[str, Any]) -> bool:
    """Reached the same way, and enabled alike."""

    from ..mcpservers import ServerState

    def key(view: dict[str, Any]) -> tuple[str, str, bool]:
        return view["transport"], view["target"], view["state"] == ServerState.DISABLED

    return key(running) == key(configured)


def _fresh_views(home: Home) -> list[dict[str, Any]]:
    """Start every configured server, look, and stop them again."""
    from ..app import App
    from ..mcpservers import McpServers

    app = App.load(home)
    try:
        servers = McpServers(app.config.mcp, app.home, app.tools, os.environ)
        servers.start()
        try:
            return [v.as_dict() for v in servers.views()]
        finally:
            servers.stop()
    finally:
        app.close()


def arguments_of(text: str | None) -> dict[str, Any]:
    """``--args``: a JSON object (none given: no arguments)."""
    if text is None:
        return {}
    try:
        value = loads_json(text, source="--args")
    except DocumentError as exc:
        raise UsageError(str(exc)) from exc
    if not isinstance(value, dict):
        raise UsageError('--args must be a JSON object, like \'{"path": "notes.md"}\'')
    return value
