"""The MCP servers of one home: started together, stopped together, seen by ``status``.

The daemon builds :class:`McpServers` before startup (so an unset ``${VAR}`` stops it with a
``ConfigError``), starts them after recovery (in parallel; it waits until each is ready or has
failed once, bounded by the start timeout) and stops them on shutdown. Each state change is
written to the store (plugin data ``mcp``), where ``smarthole status`` reads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config.mcp import McpSettings
from ..formats import utc_now
from ..home import Home
from ..tools import ToolRegistry
from .servers import Server, ServerState, ServerView

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
        self.home, self.registry, self.environ, self.clock = home, registry, environ, clock
        self._loop: EventLoop | None = None
        self._stops: dict[str, asyncio.Event] = {}  # each running server's own stop
        self._tasks: dict[str, Any] = {}
        self.servers: dict[str, Server] = {}
        for name in settings.servers:
            if only is None or name == only:
                self.servers[name] = self._server(settings, name)
        self._require_sdk(self.servers.values())

    def _server(self, settings: McpSettings, name: str) -> Server:
        """Server ``name`` of ``settings``, its ``${VAR}``s resolved (``ConfigError``)."""
        server = settings.servers[name]
        resolved = server.resolve(self.home.root, self.environ) if server.enabled else None
        return Server(
            server,
            resolved,
            registry=self.registry,
            call_timeout=settings.call_timeout(server),
            start_timeout=settings.start_timeout(server),
            stderr_path=self.home.state / "mcp" / f"{name}.stderr.log",
            clock=self.clock,
            on_change=self._save,
        )

    @staticmethod
    def _require_sdk(servers: Iterable[Server]) -> None:
        if any(s.resolved is not None for s in servers):
            from .client import require_sdk

            require_sdk()

    def __bool__(self) -> bool:
        return bool(self.servers)

    def start(self, *, wait: bool = True) -> None:
        """Start every enabled server at once; with ``wait``, until each is ready or failed."""
        self._save()
        self._launch(list(self.servers.values()), wait=wait)

    def _launch(self, servers: list[Server], *, wait: bool) -> None:
        enabled = [s for s in servers if s.resolved is not None]
        if not enabled:
            return
        if self._loop is None:
            from .client import EventLoop

            self._loop = EventLoop()
        loop = self._loop
        for server in enabled:
            server._submit = loop.submit
            stop = self._stops[server.settings.name] = loop.submit(_make_event()).result()
            self._tasks[server.settings.name] = loop.submit(server.supervise(stop))
        if wait:
            loop.submit(_all_settled(enabled)).result()
            ready = sum(1 for s in enabled if s.view.state is ServerState.READY)
            logger.info("MCP servers: %d of %d ready", ready, len(enabled))

    def stop(self) -> None:
        """Stop every server and the event loop; their tools leave the registry."""
        loop = self._loop
        if loop is None:
            return
        self._halt(list(self._tasks))
        loop.stop()
        self._loop = None
        for server in self.servers.values():
            if server.view.state is not ServerState.DISABLED:
                server.view.state = ServerState.STOPPED
        self._save()

    def _halt(self, names: list[str]) -> None:
        """Stop these servers (on their loop) and wait for them, together."""
        import concurrent.futures

        assert self._loop is not None
        for name in names:
            self._loop.call_soon(self._stops.pop(name).set)
        tasks = [self._tasks.pop(name) for name in names]
        _, late = concurrent.futures.wait(tasks, timeout=STOP_SECONDS)
        if late:
            logger.warning("%d MCP server(s) did not stop in time; leaving them", len(late))

    # -- a reload ---------------------------------------------------------------------------

    def prepare(self, settings: McpSettings) -> McpChange:
        """What applying ``settings`` would do; ``ConfigError`` (an unset ``${VAR}``, say) if
        it cannot be done, before anything is changed."""
        old, new = self.settings.servers, settings.servers
        removed = [name for name in old if name not in new]
        changed = [name for name in new if name in old and new[name] != old[name]]
        added = [name for name in new if name not in old]
        timeouts = (settings.timeout_seconds, settings.start_timeout_seconds)
        if timeouts != (self.settings.timeout_seconds, self.settings.start_timeout_seconds):
            changed += [n for n in new if n in old and n not in changed]  # their timeouts moved
        starting = {name: self._server(settings, name) for name in (*changed, *added)}
        self._require_sdk(starting.values())
        return McpChange(self, settings, removed, changed, added, starting)

    def _apply(self, change: McpChange) -> None:
        going = [*change.removed, *change.changed]
        for name in going:  # a call in flight finishes first; no new one starts meanwhile
            server = self.servers[name]
            server.registry.replace_group(server.group, [])
            server.wait_idle(server.call_timeout + 15)
        running = [name for name in going if name in self._tasks]
        if running:
            self._halt(running)
        for name in going:
            del self.servers[name]
        self.settings = change.settings
        self.servers.update(change.starting)
        self.servers = {name: self.servers[name] for name in change.settings.servers}
        self._save()
        self._launch(list(change.starting.values()), wait=True)

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


@dataclass
class McpChange:
    """A reload's changes to the MCP servers, checked and ready to apply."""

    owner: McpServers
    settings: McpSettings
    removed: list[str]
    changed: list[str]
    added: list[str]
    starting: dict[str, Server]

    def __bool__(self) -> bool:
        return bool(self.removed or self.changed or self.added)

    def apply(self) -> list[str]:
        """Stop the removed and changed servers, start the changed and added ones (waiting
        until each is ready or has failed once); returns one line per change, for the log."""
        self.owner._apply(self)
        said = [f"MCP server {n} stopped (removed from config.toml)" for n in self.removed]
        for name in (*self.changed, *self.added):
            state = self.owner.servers[name].view.state
            verb = "restarted" if name in self.changed else "started"
            said.append(f"MCP server {name} {verb} ({state})")
        return said
