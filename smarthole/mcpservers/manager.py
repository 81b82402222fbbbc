"""The MCP servers of one home: started together, stopped together, seen by ``status``.

The daemon builds :class:`McpServers` before startup (so an unset ``${VAR}`` stops it with a
``ConfigError``), starts them after recovery (in parallel; it waits until each is ready or has
failed once, bounded by the start timeout) and stops them on shutdown. Each state change is
written to the store (plugin data ``mcp``), where ``smarthole status`` reads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config.mcp import McpSettings
from ..formats import utc_now
from ..home import Home
from ..tools import ToolRegistry
from .servers import Server, ServerView

if TYPE_CHECKING:
    from ..db.plugindata import PluginData
    from .client import EventLoop

logger = logging.getLogger(__name__)

STATUS_PLUGIN = "mcp"
STATUS_KEY = "servers"
STOP_SECONDS = 10.0  # for every server together: closing stdin, then SIGTERM, then SIGKILL


class McpServers:
    """Every ``[mcp.servers.<name>]`` of a home, each with its supervisor."""

    def __init__(
        self,
        settings: McpSettings,
        home: Home,
        registry: ToolRegistry,
        environ: Mapping[str, str],
        *,
        status: PluginData | None = None,
        clock: Callable[[], datetime] = utc_now,
        only: str | None = None,
    ) -> None:
        """Resolve each enabled server's ``${VAR}``s (raising ``ConfigError``); start nothing.

        ``only`` limits the set to one server (``smarthole mcp call``).
        """
        self.settings = settings
        self.status = status
        self._loop: EventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._tasks: list[Any] = []
        self.servers: dict[str, Server] = {}
        for name, server in settings.servers.items():
            if only is not None and name != only:
                continue
            resolved = server.resolve(home.root, environ) if server.enabled else None
            self.servers[name] = Server(
                server,
                resolved,
                registry=registry,
                call_timeout=settings.call_timeout(server),
                start_timeout=settings.start_timeout(server),
                stderr_path=home.state / "mcp" / f"{name}.stderr.log",
                clock=clock,
                on_change=self._save,
            )
        if any(s.resolved is not None for s in self.servers.values()):
            from .client import require_sdk

            require_sdk()

    def __bool__(self) -> bool:
        return bool(self.servers)

    def start(self, *, wait: bool = True) -> None:
        """Start every enabled server at once; with ``wait``, until each is ready or failed."""
        enabled = [s for s in self.servers.values() if s.resolved is not None]
        self._save()
        if not enabled:
            return
        from .client import EventLoop

        loop = self._loop = EventLoop()
        for server in enabled:
            server._submit = loop.submit
        self._stopping = loop.submit(_make_event()).result()
        stopping = self._stopping
        self._tasks = [loop.submit(s.supervise(stopping)) for s in enabled]
        if wait:
            loop.submit(_all_settled(enabled)).result()
            ready = sum(1 for s in enabled if s.view.state == "ready")
            logger.info("MCP servers: %d of %d ready", ready, len(enabled))

    def stop(self) -> None:
        """Stop every server and the event loop; their tools leave the registry."""
        loop, stopping = self._loop, self._stopping
        if loop is None or stopping is None:
            return
        loop.call_soon(stopping.set)
        import concurrent.futures

        _, late = concurrent.futures.wait(self._tasks, timeout=STOP_SECONDS)
        if late:
            logger.warning("%d MCP server(s) did not stop in time; leaving them", len(late))
        loop.stop()
        self._loop = None
        for server in self.servers.values():
            if server.view.state != "disabled":
                server.view.state = "stopped"
        self._save()

    def views(self) -> list[ServerView]:
        return [s.view for s in self.servers.values()]

    def _save(self) -> None:
        if self.status is None:
            return
        try:
            self.status.set(STATUS_KEY, [v.as_dict() for v in self.views()])
        except Exception:  # status is for people; never let it break a server's supervision
            logger.exception("could not record the MCP servers' state")


def recorded_views(status: PluginData) -> list[dict[str, Any]]:
    """The servers' state as the daemon last recorded it."""
    value = status.get(STATUS_KEY, [])
    return value if isinstance(value, list) else []


async def _make_event() -> asyncio.Event:
    return asyncio.Event()


async def _all_settled(servers: list[Server]) -> None:
    await asyncio.gather(*(s.settled.wait() for s in servers))
