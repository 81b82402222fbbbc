"""The WebSocket connection to the desktop, in a thread of its own with its own asyncio loop.

The only importer of ``websockets`` (imported when the thread starts). One connection at a
time: connect, register, then read frames and send waiting notifications until the
connection ends; then wait ``min(1000 * 2**attempt, 30000)`` ms plus up to a tenth more
(jitter, so many clients do not retry in step) and try again, for ever. ``attempt`` starts
again from 0 after each successful registration.

The library answers the desktop's pings, and reads the pongs to its own, only while frames are
read: so one task reads without pause and hands messages to another that stores them in
batches (``backlog``). A burst of thousands costs the keepalive nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from ...backoff import Backoff
from ...errors import DesktopError
from . import protocol
from .backlog import Backlog
from .protocol import BadFrame
from .records import BridgeState

if TYPE_CHECKING:
    from ...channels import ChannelHost
    from .intake import Intake

logger = logging.getLogger(__name__)

RECONNECT_MS = Backoff(base=1000, cap=30000, jitter=0.1, jitter_past_cap=True)
REGISTRATION_TIMEOUT = 10.0
REFUSED_CLOSE_CODE = 4000  # what the desktop's own client closes with after a refusal
STOP_TIMEOUT = 10.0
STOPPING = "smarthole is stopping"
# Most messages stored (and acked) at once: a burst's acks go out in steps, not all at the end.
MAX_BATCH = 200


def backoff_ms(attempt: int, *, jitter: Callable[[float, float], float] = random.uniform) -> float:
    """The wait before reconnect number ``attempt`` (0-based), in milliseconds."""
    return RECONNECT_MS.delay(attempt + 1, uniform=jitter)


@dataclass(frozen=True)
class Identity:
    """Who the bridge registers as, and where."""

    url: str
    name: str
    description: str
    version: str


class RegistrationRefused(DesktopError):
    """The desktop answered the registration with ``success: false``."""


@dataclass(eq=False)
class Bridge:
    """Keeps one home connected to the desktop until :meth:`stop`."""

    identity: Identity
    intake: Intake
    host: ChannelHost  # the records: status, messages, the notifications owed
    _: KW_ONLY
    title_for: Callable[[str | None], str]
    emit: Callable[..., None]
    _thread: threading.Thread | None = field(default=None, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _started: threading.Event = field(default_factory=threading.Event, init=False)
    _stopping: asyncio.Event | None = field(default=None, init=False)
    _wake: asyncio.Event | None = field(default=None, init=False)
    _serving: bool = field(default=False, init=False)

    # -- from other threads -----------------------------------------------------------------

    def start(self) -> None:
        self.host.set_status(
            BridgeState.CONNECTING,
            url=self.identity.url,
            name=self.identity.name,
            last_error=None,
            client_id=None,
        )
        self._thread = threading.Thread(target=self._run, name="smarthole-desktop", daemon=True)
        self._thread.start()
        self._started.wait(STOP_TIMEOUT)

    def wake(self) -> None:
        """A notification is waiting: send it now if connected (thread-safe)."""
        self._call_in_loop(lambda events: events[1].set())

    def stop(self) -> None:
        self._call_in_loop(lambda events: events[0].set())
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive():
                logger.warning("desktop: the bridge thread did not stop in %.0fs", STOP_TIMEOUT)

    def _call_in_loop(self, action: Callable[[tuple[asyncio.Event, asyncio.Event]], None]) -> None:
        loop, stopping, wake = self._loop, self._stopping, self._wake
        if loop is None or stopping is None or wake is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to tell
            loop.call_soon_threadsafe(action, (stopping, wake))

    # -- the bridge's own thread ------------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception:  # never silently: the status says so, the daemon carries on
            logger.exception("desktop: the bridge stopped after an unexpected error")
            self.host.set_status(BridgeState.ERROR, last_error="the bridge stopped after a bug")
        finally:
            self._started.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping, self._wake = asyncio.Event(), asyncio.Event()
        self._started.set()
        attempt = 0
        while not self._stopping.is_set():
            await self._status(BridgeState.CONNECTING)
            registered, reason = await self._session_until_stopped()
            if registered:
                attempt = 0
                logger.warning("desktop: disconnected from %s: %s", self.identity.url, reason)
                await asyncio.to_thread(self.emit, "bridge_disconnected", reason=reason)
            if self._stopping.is_set():
                break
            await self._status(BridgeState.ERROR, last_error=reason)
            delay = backoff_ms(attempt) / 1000
            attempt += 1
            if not registered:
                logger.warning(
                    "desktop: cannot connect to %s (%s); trying again in %.1fs",
                    self.identity.url,
                    reason,
                    delay,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)

    async def _session_until_stopped(self) -> tuple[bool, str]:
        """A session; a stop while connecting cancels it, a stop once registered ends it
        cleanly."""
        assert self._stopping is not None
        self._serving = False
        session = asyncio.create_task(self._session())
        stopper = asyncio.create_task(self._stopping.wait())
        await asyncio.wait({session, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not session.done() and not self._serving:
            session.cancel()
        try:
            return await session
        except asyncio.CancelledError:
            return False, STOPPING

    async def _status(self, state: BridgeState, **fields: Any) -> None:
        await asyncio.to_thread(self.host.set_status, state, **fields)

    async def _session(self) -> tuple[bool, str]:
        """One connection, from connecting to its end: (registered?, why it ended)."""
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, WebSocketException

        registered = False
        try:
            async with connect(
                self.identity.url, proxy=None, open_timeout=10, close_timeout=3
            ) as ws:
                client_id = await self._register(ws)
                # Registered is connected: a stop from here on ends the session cleanly (a
                # 1001 close and bridge_disconnected), even while the state is being written.
                registered = self._serving = True
                await self._connected(client_id)
                return True, await self._serve(ws)
        except RegistrationRefused as exc:
            return registered, str(exc)
        except ConnectionClosed as exc:
            return registered, f"the connection closed: {exc}"
        except (OSError, TimeoutError, WebSocketException) as exc:
            return registered, _describe(exc)
        except Exception as exc:  # a fault of the store, or a bug: retried like a lost connection
            logger.exception("desktop: the connection failed")
            return registered, _describe(exc)

    async def _register(self, ws: Any) -> str | None:
        identity = self.identity
        frame = protocol.registration(identity.name, identity.description, identity.version)
        await ws.send(protocol.encode(frame))
        async with asyncio.timeout(REGISTRATION_TIMEOUT):
            while True:
                answer = await self._next_frame(ws)
                if answer is None:
                    continue
                if answer.type == "registration_response":
                    break
                await self._handle(ws, answer)
        payload = answer.payload
        if payload.get("success") is True:
            client_id = payload.get("clientId")
            return client_id if isinstance(client_id, str) else None
        code, message = payload.get("code"), payload.get("message")
        logger.error("desktop: registration as %r refused: %s: %s", identity.name, code, message)
        await ws.close(REFUSED_CLOSE_CODE, "registration refused")
        raise RegistrationRefused(f"registration refused: {code}: {message}")

    async def _connected(self, client_id: str | None) -> None:
        logger.info(
            "desktop: connected to %s as %r (client id %s)",
            self.identity.url,
            self.identity.name,
            client_id,
        )
        await asyncio.to_thread(self._record_connected, client_id)

    def _record_connected(self, client_id: str | None) -> None:
        """The state and its event in one commit: whoever sees one sees the other."""
        with self.host.records.store.transaction():
            self.host.set_status(BridgeState.CONNECTED, last_error=None, client_id=client_id)
            self.emit(
                "bridge_connected",
                url=self.identity.url,
                name=self.identity.name,
                client_id=client_id,
            )

    async def _serve(self, ws: Any) -> str:
        """Read frames and send notifications until the connection ends or the bridge stops."""
        assert self._stopping is not None
        backlog = Backlog()
        tasks = {
            asyncio.create_task(self._receive(ws, backlog), name="receive"),
            asyncio.create_task(self._store(ws, backlog), name="store"),
            asyncio.create_task(self._send_waiting(ws), name="send"),
            asyncio.create_task(self._stopping.wait(), name="stop"),
        }
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for task in done:
            if task.get_name() == "stop":
                await ws.close(1001, STOPPING)
                return STOPPING
            task.result()  # a failure of the connection raises here
        return f"the connection closed (code {ws.close_code})"

    async def _receive(self, ws: Any, backlog: Backlog) -> None:
        """Read frames as they come; messages wait in ``backlog`` to be stored."""
        while True:
            frame = await self._next_frame(ws)
            if frame is None:
                continue
            if frame.type == "message":
                await backlog.put(frame.payload, frame.size)
            else:
                logger.warning("desktop: ignored an unexpected %s frame", frame.type)

    async def _store(self, ws: Any, backlog: Backlog) -> None:
        """Store what waits, a batch at a time, then answer each message of the batch.

        A connection lost meanwhile loses only answers: the desktop sends an unanswered
        message again, and one already stored is acknowledged as a duplicate.
        """
        while True:
            batch = await backlog.take(MAX_BATCH)
            for taken in await asyncio.to_thread(self.intake.take_batch, batch):
                if taken.answer is not None:
                    await ws.send(protocol.encode(taken.answer))

    async def _next_frame(self, ws: Any) -> protocol.Frame | None:
        """The next usable frame; a bad one is ignored with a warning (None)."""
        raw = await ws.recv()
        try:
            return protocol.parse_frame(raw)
        except BadFrame as exc:
            logger.warning("desktop: ignored a frame: %s", exc)
            return None

    async def _handle(self, ws: Any, frame: protocol.Frame) -> None:
        if frame.type == "message":
            taken = await asyncio.to_thread(self.intake.take, frame.payload)
            if taken.answer is not None:
                await ws.send(protocol.encode(taken.answer))
        else:
            logger.warning("desktop: ignored an unexpected %s frame", frame.type)

    async def _send_waiting(self, ws: Any) -> None:
        """Send every notification owed, oldest first; then wait to be woken."""
        from websockets.protocol import State

        assert self._wake is not None
        while True:
            for delivery in await asyncio.to_thread(self.host.waiting):
                if ws.protocol.state is not State.OPEN:
                    return  # kept: it goes after the next registration
                title = await asyncio.to_thread(self.title_for, delivery.conversation)
                # Recorded sent first: at most once, even if the daemon dies right here.
                await asyncio.to_thread(self.host.sent, delivery)
                try:
                    await ws.send(protocol.encode(protocol.notification(delivery, title)))
                except Exception as exc:  # not written: owed again, sent after reconnecting
                    await asyncio.to_thread(self.host.failed, delivery, _describe(exc))
                    raise
                logger.info(
                    "desktop: sent %s %s as a notification on message %s",
                    delivery.kind,
                    delivery.outbox_id,
                    delivery.message_id,
                )
            await self._wake.wait()
            self._wake.clear()


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
