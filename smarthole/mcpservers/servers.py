"""One configured MCP server while the daemon runs: its state, its tools, its restarts.

A :class:`Server` is supervised by one task on the MCP event loop (:meth:`Server.supervise`):
start (within the start timeout), list the tools and put them in the registry, wait until the
server exits or the daemon stops, take the tools out, and after a failure wait (1 s, doubling
to 5 minutes) and start again. A failure is logged once per run of failures, with the last
lines of the server's stderr; the next success is logged too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from ..backoff import Backoff
from ..config.mcp import McpServerSettings, ResolvedServer
from ..formats import iso
from ..tools import SchemaTool, Tool, ToolRegistry, ToolResult
from .client import CallTimedOut, Connection, RemoteTool, ServerLost, stderr_tail
from .names import exposed_name
from .noise import StrayLines
from .results import to_tool_result

logger = logging.getLogger(__name__)

RESTART = Backoff(base=1.0, cap=300.0)
STEADY_SECONDS = 60.0  # up this long, a server that exits starts again from the first wait
IDEMPOTENT_HINTS = ("readOnlyHint", "idempotentHint")


class ServerState(StrEnum):
    """Where a server stands, as ``status`` and ``smarthole mcp list`` show it."""

    NOT_STARTED = "not started"  # configured; no daemon runs (``mcp list`` without one)
    DISABLED = "disabled"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"


@dataclass
class ServerView:
    """What ``status`` and ``smarthole mcp list`` show of a server: no secret in it."""

    name: str
    transport: str
    target: str
    state: ServerState = ServerState.STARTING
    reason: str | None = None
    stderr: list[str] = field(default_factory=list)
    since: str | None = None
    retry_at: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(eq=False)
class Server:
    """One server: supervised on the event loop, called from worker threads."""

    settings: McpServerSettings
    resolved: ResolvedServer | None
    _: KW_ONLY
    registry: ToolRegistry
    call_timeout: float
    start_timeout: float
    stderr_path: Path
    clock: Callable[[], datetime]
    on_change: Callable[[], None]
    view: ServerView = field(init=False)
    connection: Connection | None = field(default=None, init=False)
    # the first start ended, in success or failure
    settled: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _logged_failure: bool = field(default=False, init=False)
    # rate-limited across restarts: a server that prints junk as it starts must not flood the log
    stray_lines: StrayLines = field(init=False)
    # set by the owner: runs a coroutine on the event loop
    _submit: Callable[[Any], Any] = field(init=False)
    # calls in flight, from the workers' threads
    _calls: int = field(default=0, init=False)
    _calls_changed: threading.Condition = field(default_factory=threading.Condition, init=False)

    def __post_init__(self) -> None:
        self.view = ServerView(
            self.settings.name, self.settings.transport, self.settings.describe()
        )
        self.stray_lines = StrayLines(self.settings.name)
        if self.resolved is None:
            self.view.state = ServerState.DISABLED

    @property
    def group(self) -> str:
        return f"mcp:{self.settings.name}"

    # -- supervision (on the event loop) ---------------------------------------------------

    async def supervise(self, stopping: asyncio.Event) -> None:
        failures = 0
        while not stopping.is_set():
            self._set(ServerState.STARTING)
            up_at = await self._run_once(stopping)
            if stopping.is_set():
                break
            if up_at is not None and time.monotonic() - up_at > STEADY_SECONDS:
                failures = 0
            failures += 1
            delay = RESTART.delay(failures)
            self._wait_note(delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), delay)
        self._uninstall()
        self._set(ServerState.STOPPED)

    async def _run_once(self, stopping: asyncio.Event) -> float | None:
        """Start, serve until the server is gone; returns when it was up (None if never)."""
        assert self.resolved is not None
        connection = Connection(
            self.settings, self.resolved, self.stderr_path, self._refresh_tools, self.stray_lines
        )
        opened: asyncio.Future[list[RemoteTool]] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(connection.serve(opened))
        try:
            tools = await asyncio.wait_for(asyncio.shield(opened), self.start_timeout)
        except TimeoutError:
            opened.cancel()  # nobody waits for it any more
            task.cancel()
            # Said before the clean-up (which may wait seconds for the process to end), so a
            # daemon waiting for its servers waits no longer than the start timeout.
            self._fail(f"did not start within {self.start_timeout:g} s (start timeout)")
            await _finish(task)
            return None
        except Exception as exc:
            await _finish(task)
            self._fail(f"could not start: {self._describe(exc)}")
            return None
        up_at = time.monotonic()
        self.connection = connection
        self._install(tools)
        self._set(ServerState.READY)
        if self._logged_failure:
            logger.info("MCP server %s is ready again", self.settings.name)
        self._logged_failure = False
        await _first(connection.lost.wait(), stopping.wait())
        self.connection = None
        self._uninstall()
        connection.close()
        await _finish(task)
        if not stopping.is_set():
            self._fail("exited" if self.resolved.command else "stopped answering")
        return up_at

    def _fail(self, reason: str) -> None:
        self.view.stderr = [self._redact(line) for line in stderr_tail(self.stderr_path)]
        self._set(ServerState.FAILED, reason)
        if not self._logged_failure:
            said = "".join(f"\n    {line}" for line in self.view.stderr)
            logger.warning(
                "MCP server %s %s; its tools are unavailable until it comes back (retrying "
                "with backoff)%s",
                self.settings.name,
                reason,
                f"; the last lines of its stderr:{said}" if said else "",
            )
            self._logged_failure = True
        else:
            logger.debug("MCP server %s %s again", self.settings.name, reason)
        self.settled.set()

    def _wait_note(self, delay: float) -> None:
        from datetime import timedelta

        self.view.retry_at = iso(self.clock() + timedelta(seconds=delay))
        self.on_change()

    def _set(self, state: ServerState, reason: str | None = None) -> None:
        self.view.state = state
        self.view.reason = reason
        self.view.since = iso(self.clock())
        if state is not ServerState.FAILED:
            self.view.retry_at = None
            self.view.stderr = []
        if state is ServerState.READY:
            self.settled.set()
        self.on_change()

    # -- tools -----------------------------------------------------------------------------

    async def _refresh_tools(self) -> None:
        """The server said its tools changed (``notifications/tools/list_changed``)."""
        connection = self.connection
        if connection is None:
            return
        try:
            tools = await connection.list_tools()
        except Exception as exc:
            logger.warning("MCP server %s: cannot list its tools: %s", self.settings.name, exc)
            return
        logger.info("MCP server %s changed its tools", self.settings.name)
        self._install(tools)
        self.on_change()

    def _install(self, remote: list[RemoteTool]) -> None:
        tools: list[Tool] = []
        listed: list[dict[str, Any]] = []
        refused: list[str] = []
        seen: set[str] = set()
        for item in remote:
            if not self.settings.allows(item.name):
                continue
            name = exposed_name(self.settings.name, item.name)
            if name in seen:
                refused.append(f"{item.name} (its name {name} is taken)")
                continue
            seen.add(name)
            tool = self._tool(name, item)
            tools.append(tool)
            listed.append(
                {
                    "name": name,
                    "server_tool": item.name,
                    "description": tool.summary,
                    "annotations": item.annotations,
                    "idempotent": tool.idempotent,
                }
            )
        taken = set(self.registry.replace_group(self.group, tools))
        refused += [
            f"{t['server_tool']} (its name {t['name']} is taken)"
            for t in listed
            if t["name"] in taken
        ]
        if refused and refused != self.view.refused:
            logger.warning(
                "MCP server %s: tools refused: %s", self.settings.name, "; ".join(refused)
            )
        self.view.tools = [t for t in listed if t["name"] not in taken]
        self.view.refused = refused

    def _uninstall(self) -> None:
        self.registry.replace_group(self.group, [])
        self.view.tools = []

    def _tool(self, name: str, remote: RemoteTool) -> SchemaTool:
        schema = dict(remote.input_schema)
        schema.setdefault("type", "object")
        idempotent = (
            any(remote.annotations.get(hint) is True for hint in IDEMPOTENT_HINTS)
            or remote.name in self.settings.idempotent
            or name in self.settings.idempotent
        )
        return SchemaTool(
            name=name,
            description=remote.description,
            plugin=self.group,
            idempotent=idempotent,
            read_only=remote.annotations.get("readOnlyHint") is True,
            schema=schema,
            handler=lambda arguments: self.call(remote.name, arguments),
        )

    # -- calls (from any thread but the loop's) --------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool`` and wait; every failure is an ``is_error`` result, never an exception."""
        name = self.settings.name
        connection = self.connection
        if connection is None:
            why = f" ({self.view.reason})" if self.view.reason else ""
            return ToolResult(f"Error: server {name} is not running{why}", True)
        with self._calls_changed:
            self._calls += 1
        try:
            return self._wait_for(connection, tool, arguments)
        finally:
            with self._calls_changed:
                self._calls -= 1
                self._calls_changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no call is in flight (a reload stopping this server lets them finish)."""
        with self._calls_changed:
            return self._calls_changed.wait_for(lambda: self._calls == 0, timeout)

    def _wait_for(self, connection: Connection, tool: str, arguments: dict[str, Any]) -> ToolResult:
        import concurrent.futures

        name = self.settings.name
        future = self._submit(connection.call(tool, arguments, self.call_timeout))
        try:
            return to_tool_result(future.result(self.call_timeout + 15))
        except ServerLost:
            return ToolResult(f"Error: server {name} stopped during the call", True)
        except (CallTimedOut, concurrent.futures.TimeoutError):
            future.cancel()
            return ToolResult(
                f"Error: server {name} did not answer within {self.call_timeout:g} s "
                "(timeout_seconds); the call was cancelled",
                True,
            )
        except Exception as exc:
            logger.exception("MCP server %s: calling %s failed", name, tool)
            return ToolResult(
                f"Error: calling {tool} on server {name} failed: {self._describe(exc)}", True
            )

    def _describe(self, exc: BaseException) -> str:
        text = str(exc) or type(exc).__name__
        if isinstance(exc, BaseExceptionGroup):
            text = "; ".join(self._describe(e) for e in exc.exceptions)
        return self._redact(text)

    def _redact(self, text: str) -> str:
        return self.resolved.redact(text) if self.resolved else text


async def _first(*waits: Coroutine[Any, Any, Any]) -> None:
    """Wait until the first of ``waits`` is done; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


async def _finish(task: asyncio.Future[Any]) -> None:
    """Wait for a connection's task to end, whatever it ends with."""
    try:
        await task
    except BaseException:  # its outcome was already reported through ``opened``
        if not task.done():
            raise
