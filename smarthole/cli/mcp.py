"""``smarthole mcp list`` and ``smarthole mcp call``: the MCP servers of a home, by hand.

Both work without a running daemon: they start the servers themselves for as long as the
command runs. ``list`` shows a running daemon's own view instead, as it recorded it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import DocumentError, LookupFailed, UsageError
from ..formats import loads_json
from .commands import _home
from .output import print_json
from .render import server_lines


def mcp_list(args: argparse.Namespace) -> int:
    views = _running_views(args) or _fresh_views(args)
    if args.json:
        print_json(views)
    elif not views:
        print("No MCP servers in config.toml (add a [mcp.servers.<name>] table).")
    else:
        print("\n".join(server_lines(views, tools=True)))
    return 0


def mcp_call(args: argparse.Namespace) -> int:
    from ..app import App
    from ..mcpservers import McpServers, exposed_name

    arguments = _arguments(args.args)
    app = App.load(_home(args))
    try:
        if args.server not in app.config.mcp.servers:
            raise LookupFailed(f"no MCP server named {args.server!r} in config.toml")
        servers = McpServers(app.config.mcp, app.home, app.tools, os.environ, only=args.server)
        servers.start()
        try:
            (view,) = servers.views()
            if view.state != "ready":
                print("\n".join(server_lines([view.as_dict()], tools=False)), file=sys.stderr)
                return 1
            name = args.tool if "__" in args.tool else exposed_name(args.server, args.tool)
            tool = app.tools.get(name)
            if tool is None or tool.plugin != f"mcp:{args.server}":
                offered = ", ".join(t["server_tool"] for t in view.tools) or "none"
                raise LookupFailed(f"server {args.server} has no tool {args.tool!r} ({offered})")
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
    return 1 if result.is_error else 0


def _running_views(args: argparse.Namespace) -> list[dict[str, Any]]:
    """A running daemon's servers as it recorded them (empty when none is running)."""
    from ..home import holder
    from ..mcpservers import recorded_views
    from .commands import opened

    home = _home(args)
    if holder(home.lock_file) is None:
        return []
    with opened(args) as (_, store):
        return recorded_views(store.plugin_data("mcp"))


def _fresh_views(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Start every configured server, look, and stop them again."""
    from ..app import App
    from ..mcpservers import McpServers

    app = App.load(_home(args))
    try:
        servers = McpServers(app.config.mcp, app.home, app.tools, os.environ)
        servers.start()
        try:
            return [v.as_dict() for v in servers.views()]
        finally:
            servers.stop()
    finally:
        app.close()


def _arguments(text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = loads_json(text, source="--args")
    except DocumentError as exc:
        raise UsageError(str(exc)) from exc
    if not isinstance(value, dict):
        raise UsageError('--args must be a JSON object, like \'{"path": "notes.md"}\'')
    return value
