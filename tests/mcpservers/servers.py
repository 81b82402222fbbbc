"""Small real MCP servers for the tests, written with the SDK's server side.

Run as ``python servers.py KIND [--http PORTFILE]``: over stdio by default; with
``--http`` it serves streamable HTTP on 127.0.0.1 at a free port, which it writes to PORTFILE.
The tools write what they did into files in their working folder (the home), so a test can
count runs across daemon crashes:

- ``good``: ``read_note`` (read-only), ``lookup`` (idempotent), ``append_note`` (neither),
  ``picture``, ``resources``, ``refuse`` (an error result), and ``slow_read`` / ``slow_write``,
  which wait for a ``go-<tag>`` file so a test can kill the daemon during the call.
- ``crash``: ``crash`` exits the process in the middle of the call.
- ``hang``: ``hang`` never answers.
- ``never``: never finishes starting.
- ``changing``: ``grow`` adds a tool and tells the client the list changed.
- ``chatty``: prints lines that are not JSON-RPC on its stdout (:data:`JUNK`), once as it
  starts and again in each call of ``chatter``, before its answer.
- ``family``: ignores SIGTERM and starts a child that ignores it too (``family-pids``).
"""

from __future__ import annotations

import asyncio
import base64
import io
import os
import socket
import sys
from pathlib import Path

if __name__ == "__main__" and sys.argv[1:2] == ["never"]:
    # Before importing mcp, which takes over a second on a busy machine: the tests expect this
    # line within the server's 1 s start timeout.
    print("never: waiting for something that will not come", file=sys.stderr, flush=True)
    while True:
        __import__("time").sleep(60)

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

# A 1x1 PNG.
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
READ_ONLY = ToolAnnotations(readOnlyHint=True)
IDEMPOTENT = ToolAnnotations(readOnlyHint=False, idempotentHint=True)


def ran(what: str) -> None:
    with Path("mcp-runs.log").open("a") as log:
        log.write(what + "\n")


async def wait_for_go(tag: str) -> None:
    Path(f"started-{tag}").write_text(str(os.getpid()))  # a test may need to end this process
    while not Path(f"go-{tag}").exists():
        await asyncio.sleep(0.02)


def good(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY)
    def read_note(name: str) -> str:
        """Read a note by name."""
        ran(f"read_note {name}")
        return f"The note {name} says: buy milk."

    @server.tool(annotations=IDEMPOTENT)
    def lookup(tag: str) -> str:
        """Look a tag up."""
        ran(f"lookup {tag}")
        return f"found {tag}"

    @server.tool()
    def append_note(text: str) -> str:
        """Append a line to the notes."""
        ran(f"append_note {text}")
        return "appended"

    @server.tool(annotations=READ_ONLY)
    def picture() -> list[ImageContent | TextContent]:
        """Show a picture."""
        return [
            TextContent(type="text", text="a pixel:"),
            ImageContent(type="image", data=PIXEL, mimeType="image/png"),
        ]

    @server.tool(annotations=READ_ONLY)
    def resources() -> list[EmbeddedResource | ResourceLink]:
        """Point at two resources."""
        embedded = TextResourceContents(
            uri="file:///notes/a.md", mimeType="text/markdown", text="# A"
        )
        return [
            EmbeddedResource(type="resource", resource=embedded),
            ResourceLink(type="resource_link", uri="file:///notes/b.md", name="b.md"),
        ]

    @server.tool()
    def refuse() -> CallToolResult:
        """Always refuse."""
        return CallToolResult(content=[TextContent(type="text", text="not allowed")], isError=True)

    @server.tool(annotations=READ_ONLY)
    async def slow_read(tag: str) -> str:
        """Read slowly."""
        ran(f"slow_read-start {tag}")
        await wait_for_go(tag)
        ran(f"slow_read {tag}")
        return f"read {tag}"

    @server.tool()
    async def slow_write(tag: str) -> str:
        """Write slowly."""
        ran(f"slow_write-start {tag}")
        await wait_for_go(tag)
        ran(f"slow_write {tag}")
        return f"wrote {tag}"


def crash(server: MCPServer) -> None:
    @server.tool()
    def crash() -> str:
        """Exit in the middle of the call."""
        print("crash: something went badly wrong", file=sys.stderr, flush=True)
        os._exit(3)


def hang(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY)
    async def hang() -> str:
        """Never answer."""
        ran("hang")
        await asyncio.sleep(3600)
        return "too late"


# Eleven lines that are not JSON-RPC: plain text, terminal escapes, very long, JSON of another
# kind, blank, not UTF-8.
JUNK = [
    b"chatty: starting up",
    b"\x1b[31mred alert\x1b[0m",
    b"x" * 500,
    b'{"progress": 3}',
    b"bell\x07 and backspace\x08",
    b"42",
    b"",
    b"\x1b]0;a new window title\x07",
    b"debug: everything is fine",
    b"\x1b[2J cleared the screen",
    b"latin-1 caf\xe9",
]


def chatter_on_stdout() -> None:
    # One write per line: the SDK writes its own messages between them, whole.
    for line in JUNK:
        os.write(1, line + b"\n")


def chatty(server: MCPServer) -> None:
    @server.tool(annotations=READ_ONLY)
    async def chatter(word: str) -> str:
        """Print junk on stdout, then answer."""
        chatter_on_stdout()
        return f"said {word}"


async def serve_stdio_undiverted(server: MCPServer) -> None:
    """Serve over stdio with fd 1 left as it is: the SDK's ``run()`` diverts it to stderr, which
    would keep the junk of a tool off the wire."""
    from mcp.server.stdio import stdio_server

    stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8"))
    stdout = anyio.wrap_file(io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    lowlevel = server._lowlevel_server
    async with stdio_server(stdin, stdout) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def changing(server: MCPServer) -> None:
    @server.tool()
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool called ``name``."""
        server.add_tool(lambda: f"I am {name}", name=name, description=f"The tool {name}.")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"


def family(server: MCPServer) -> None:
    """A server that ignores SIGTERM and starts a child of its own that ignores it too, then
    writes ``<server pid> <child pid>`` to ``family-pids`` in its working folder."""
    import signal
    import subprocess

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(600)",
        ]
    )
    Path("family-pids.tmp").write_text(f"{os.getpid()} {child.pid}")
    Path("family-pids.tmp").rename("family-pids")

    @server.tool(annotations=READ_ONLY)
    def hello() -> str:
        """Say hello."""
        return "hello"


KINDS = {
    "good": good,
    "crash": crash,
    "hang": hang,
    "changing": changing,
    "chatty": chatty,
    "family": family,
}


def main(argv: list[str]) -> None:
    kind = argv[0]
    server = MCPServer(kind)
    KINDS[kind](server)
    if "--http" not in argv:
        if kind == "chatty":
            chatter_on_stdout()
            anyio.run(serve_stdio_undiverted, server)
            return
        server.run()
        return
    import uvicorn

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # connections wait in the backlog until uvicorn takes them
    port_file = Path(argv[argv.index("--http") + 1])
    port_file.with_suffix(".tmp").write_text(str(listener.getsockname()[1]))
    port_file.with_suffix(".tmp").rename(port_file)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main(sys.argv[1:])
