"""Talking to MCP servers: the only module that imports the ``mcp`` SDK.

The SDK is asyncio (through anyio); smarthole is threads. :class:`EventLoop` runs one asyncio
loop on a thread of its own, and everything here that awaits runs on it. A
:class:`Connection` is one session with one server, opened and closed by one task (anyio's
cancel scopes must be left by the task that entered them), and it notices when a stdio
server's output ends, so a server that exits is seen at once, not at its next call.

The SDK is imported inside functions: ``smarthole --help`` must not pay for it, and a home
without MCP servers never loads it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..config.mcp import McpServerSettings, ResolvedServer
from ..errors import ConfigError
from .noise import StrayLines, quiet_sdk_parse_errors, reading_stdio, stray_line

logger = logging.getLogger(__name__)

T = TypeVar("T")
STDERR_LINES = 10
MAX_PAGES = 100  # of a tools/list answer; a server that pages for ever must not hang a start


class ServerLost(Exception):
    """The server went away (it exited, or its transport broke) before it answered."""


class CallTimedOut(Exception):
    """The server did not answer a call within its timeout."""


def require_sdk() -> None:
    """Raise a ``ConfigError`` saying how to install the SDK when it is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "config.toml lists [mcp.servers], but the MCP SDK is not installed: "
            "pip install 'smarthole[mcp]'"
        ) from exc


@dataclass(frozen=True)
class RemoteTool:
    """One tool as a server lists it; ``annotations`` in the wire's camelCase."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


class EventLoop:
    """An asyncio event loop on its own thread. Its owner calls :meth:`stop`."""

    def __init__(self, name: str = "smarthole-mcp") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the loop; its future can be waited for from any thread."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call_soon(self, callback: Callable[[], Any]) -> None:
        self._loop.call_soon_threadsafe(callback)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (tasks still running are cancelled) and join its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)


class Connection:
    """One session with one MCP server. Every method runs on the :class:`EventLoop`."""

    def __init__(
        self,
        settings: McpServerSettings,
        resolved: ResolvedServer,
        stderr_path: Path,
        on_tools_changed: Callable[[], Awaitable[None]],
        stray_lines: StrayLines | None = None,
    ) -> None:
        self.settings = settings
        self.resolved = resolved
        self.stderr_path = stderr_path
        self.on_tools_changed = on_tools_changed
        # A stdio server's stdout lines that are not JSON-RPC; kept by the owner across restarts.
        self.stray_lines = stray_lines or StrayLines(settings.name)
        self.lost = asyncio.Event()  # the transport is gone, or the session ended
        self._stop = asyncio.Event()
        self._client: Any = None
        self._background: set[asyncio.Future[None]] = set()

    async def serve(self, opened: asyncio.Future[list[RemoteTool]]) -> None:
        """Connect, list the tools (the result of ``opened``), then hold the session open until
        :meth:`close` or the transport's end. Run it as its own task; cancel it to give up."""
        from mcp import Client
        from mcp.types import Implementation

        from .. import __version__

        stdio = self.resolved.command is not None
        if stdio:
            quiet_sdk_parse_errors()
        # Seen by the SDK's reader task, which copies this context when the transport starts it.
        marked = reading_stdio.set(stdio)
        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(
                    _watched(transport, self.lost),
                    mode="legacy",  # the initialize handshake: every server speaks it
                    cache=None,
                    message_handler=self._on_message,
                    client_info=Implementation(name="smarthole", version=__version__),
                )
                await stack.enter_async_context(client)
                self._client = client
                tools = await self.list_tools()
                if not opened.done():
                    opened.set_result(tools)
                stopped = asyncio.ensure_future(self._stop.wait())
                lost = asyncio.ensure_future(self.lost.wait())
                try:
                    await asyncio.wait({stopped, lost}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    stopped.cancel()
                    lost.cancel()
        except BaseException as exc:
            if not opened.done():
                opened.set_exception(exc if isinstance(exc, Exception) else ServerLost("cancelled"))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            self.lost.set()
            self.stray_lines.flush()
            reading_stdio.reset(marked)

    async def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        resolved = self.resolved
        if resolved.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            self.stderr_path.parent.mkdir(parents=True, exist_ok=True)
            errlog = stack.enter_context(_private_file(self.stderr_path))
            command, args = guarded(resolved.command, resolved.args)
            parameters = StdioServerParameters(
                command=command,
                args=args,
                env=resolved.env,
                cwd=resolved.cwd,
                # Not "strict": one byte of stray output that is not UTF-8 would end the SDK's
                # reader and with it the session; replaced, it is one more stray line.
                encoding_error_handler="replace",
            )
            return stdio_client(parameters, errlog=errlog)
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = await stack.enter_async_context(
            create_mcp_http_client(headers=resolved.headers or None)
        )
        return streamable_http_client(str(resolved.url), http_client=http)

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(message, ToolListChangedNotification):
            # Not awaited here: this runs inside the session's reader, which the listing needs.
            task = asyncio.ensure_future(self.on_tools_changed())
            self._background.add(task)  # held until done: the loop keeps only weak references
            task.add_done_callback(self._background.discard)
        elif isinstance(message, ValueError) and self.resolved.command is not None:
            # A line that is not JSON-RPC (the SDK skipped it); the server carries on.
            self.stray_lines.report(self.redact(stray_line(message)))
        elif isinstance(message, Exception):
            logger.debug("MCP server %s: %s", self.settings.name, self.redact(str(message)))

    def close(self) -> None:
        self._stop.set()

    def redact(self, text: str) -> str:
        return self.resolved.redact(text)

    async def list_tools(self) -> list[RemoteTool]:
        client = self._client
        if client is None:
            raise ServerLost("not connected")
        tools: list[RemoteTool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                hints = tool.annotations
                tools.append(
                    RemoteTool(
                        name=tool.name,
                        description=tool.description or tool.title or tool.name,
                        input_schema=dict(tool.input_schema),
                        annotations=hints.model_dump(by_alias=True, exclude_none=True)
                        if hints
                        else {},
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def call(self, name: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Call a tool; its result as wire JSON. Raises ``ServerLost`` or ``CallTimedOut``; an
        error the server answers with (an unknown tool, bad arguments) is an ``isError`` result."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        client = self._client
        if client is None or self.lost.is_set():
            raise ServerLost("not connected")
        try:
            # The outer limit is a backstop: the SDK's own timeout cancels the request.
            result = await asyncio.wait_for(
                client.call_tool(name, arguments, read_timeout_seconds=timeout), timeout + 5
            )
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise CallTimedOut(str(timeout)) from exc
            if exc.code == CONNECTION_CLOSED or self.lost.is_set():
                self.lost.set()
                raise ServerLost(self.redact(exc.message)) from exc
            return _error_result(f"Error: {self.redact(exc.message)}")
        except TimeoutError as exc:
            raise CallTimedOut(str(timeout)) from exc
        except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
            if isinstance(exc, OSError) or self.lost.is_set():
                self.lost.set()
                raise ServerLost(self.redact(f"{type(exc).__name__}: {exc}")) from exc
            return _error_result(f"Error: the server's answer was not valid: {exc}")
        except Exception as exc:  # a transport's own error (the HTTP client's): the link broke
            self.lost.set()
            raise ServerLost(self.redact(f"{type(exc).__name__}: {exc}")) from exc
        dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped


def stderr_tail(path: Path, lines: int = STDERR_LINES) -> list[str]:
    """The last lines a stdio server wrote to its stderr (kept in ``path``)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if line.strip()][-lines:]


def _error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


@contextlib.contextmanager
def _private_file(path: Path) -> Any:
    """``path`` opened for writing, readable only by the user (a server may print secrets)."""
    import os

    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8", errors="replace") as handle:
        yield handle


@contextlib.asynccontextmanager
async def _watched(transport: Any, lost: asyncio.Event) -> AsyncIterator[tuple[Any, Any]]:
    """The transport, with its read side reporting its end through ``lost``."""
    async with transport as (read, write):
        yield _WatchedRead(read, lost), write


class _WatchedRead:
    """A transport's read stream that sets ``lost`` when it ends (a stdio server exited)."""

    def __init__(self, stream: Any, lost: asyncio.Event) -> None:
        self._stream = stream
        self._lost = lost

    async def receive(self) -> Any:
        try:
            return await self._stream.receive()
        except Exception:
            self._lost.set()
            raise

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._stream.__anext__()
        except StopAsyncIteration:
            self._lost.set()
            raise

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _WatchedRead:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._lost.set()
        result: bool | None = await self._stream.__aexit__(*exc_info)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guarded(command: str, args: list[str]) -> tuple[str, list[str]]:
    """The server's command line under ``guard.py`` (Linux), so it dies with the daemon."""
    if not sys.platform.startswith("linux"):
        return command, args  # no PR_SET_PDEATHSIG: the SDK's own stop is all there is
    guard = str(Path(__file__).with_name("guard.py"))
    return sys.executable, ["-I", "-S", guard, command, *args]
