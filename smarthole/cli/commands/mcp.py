"""``mcp list`` and ``mcp call``: the MCP servers of config.toml, tried by hand."""

from __future__ import annotations

import argparse

from ...errors import ExitCode
from ..common import home_of, print_json
from ..parser import Commands, command, option


def register(commands: Commands) -> None:
    servers = commands.group(
        "mcp", "list and try the MCP servers of config.toml", dest="mcp_command"
    )
    servers.add(mcp_list)
    servers.add(mcp_call)


@command("list", "each MCP server, its state and its tools (a running daemon's, if one runs)")
@option("--json", action="store_true", help="one JSON array")
def mcp_list(args: argparse.Namespace) -> int:
    from ..mcp import server_views
    from ..render import loaded_footer, server_lines

    views = server_views(home_of(args))
    if args.json:
        print_json(views)
    elif not views:
        print("No MCP servers in config.toml (add a [mcp.servers.<name>] table).")
    else:
        if any("loaded" in view for view in views):
            print("As started by the running daemon:")
        print("\n".join(server_lines(views, tools=True) + loaded_footer(views)))
    return ExitCode.OK


@command("call", "call one MCP tool and print the result")
@option("server", metavar="SERVER", help="the server's name in config.toml")
@option("tool", metavar="TOOL", help="the tool's name on its server")
@option("--args", metavar="JSON", help="the arguments, a JSON object")
def mcp_call(args: argparse.Namespace) -> int:
    from ..mcp import arguments_of, call

    arguments = arguments_of(args.args)  # a bad --args fails before any server starts
    return call(home_of(args), args.server, args.tool, arguments)
