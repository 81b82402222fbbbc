"""Talking to the daemon from a terminal: ``send --wait``, ``chat`` and ``resume``.

Every message goes through the inbox like any other, and replies are read from the store's
outbox record, so a terminal conversation is processed exactly like a dropped file. While a
reply is awaited, the events of its message say what happens meanwhile: the tools the agent
calls, and each failed attempt the daemon will retry. If no daemon is running, ``chat`` runs
one in-process for the session's length (``cli.session`` is the chat's side).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..db.outbox import OutboxItem
from ..db.states import OutboxKind
from ..errors import DaemonError, MessageError
from ..formats import parse_time
from ..home import Home
from ..pipeline.inbox import drop_message
from .output import short

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..db.events import EventLog
    from ..db.outbox import OutboxRecord

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05
# What a deferred attempt's error means, by how its text begins (``agent.client``'s words):
# (beginning, what a person reads, whether the beginning is part of the reason shown).
FAILURES = (
    ("could not reach the model: ", "the model could not be reached", False),
    ("HTTP ", "the model service failed", True),
    ("the model stream reported ", "the model service failed", True),
)


def new_message_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class ToolCalled:
    """The agent called a tool while answering the message (a ``tool_called`` event)."""

    name: str


@dataclass(frozen=True)
class Retrying:
    """An attempt at the message failed; the daemon tries again at ``due`` (``turn_deferred``)."""

    attempts: int
    error: str
    due: datetime | None


Progress = OutboxItem | ToolCalled | Retrying
"""What waiting for a reply shows: a reply, a tool call, or a retry to come."""


def waiting_for(last: Progress | None, *, running: bool) -> str:
    """What a ``send --wait`` that timed out was waiting for, from the last thing it saw."""
    if isinstance(last, Retrying):
        return "the daemon retries the model, which it could not use (see above); " + (
            "the reply comes when it answers (`smarthole status`)"
        )
    if isinstance(last, OutboxItem) and last.kind == OutboxKind.APPROVAL:
        return (
            "the turn waits for your approval (`smarthole approvals`, then `smarthole approve "
            "ID` or `smarthole deny ID`); the reply comes after it"
        )
    if not running:
        return "no daemon is running (`smarthole run`); the message waits in the inbox"
    return "the daemon is running but has not answered yet (`smarthole status` says where it is)"


def retry_line(retrying: Retrying, now: datetime) -> str:
    """The one line a terminal shows for a deferred attempt, its reason escaped."""
    what, reason = "the attempt failed", retrying.error
    for beginning, said, kept in FAILURES:
        if reason.startswith(beginning):
            what, reason = said, reason if kept else reason.removeprefix(beginning)
            break
    seconds = (retrying.due - now).total_seconds() if retrying.due else 0.0
    when = (
        "now"
        if seconds < 0.5
        else f"in {seconds:.0f} s"
        if seconds < 120
        else f"in {seconds / 60:.0f} min"
    )
    return (
        f"{what} ({short(reason.strip().rstrip('.'), 100)}); retrying {when} "
        f"(attempt {retrying.attempts}) — smarthole status shows more"
    )


class Mailbox:
    """Drops messages into a home's inbox and follows them to their replies."""

    def __init__(self, home: Home, outbox: OutboxRecord, events: EventLog) -> None:
        self.home = home
        self._outbox = outbox
        self._events = events
        self._sent_after: dict[str, int] = {}  # message id: the last event before it was sent

    def send(
        self,
        text: str,
        *,
        channel: str | None = None,
        conversation: str | None = None,
        new_conversation: bool = False,
        message_id: str | None = None,
        attachments: Sequence[Path] = (),
    ) -> str:
        message_id = message_id or new_message_id()
        self._sent_after[message_id] = self._events.latest_id()
        fields = {
            "channel": channel,
            "conversation": conversation,
            "new_conversation": new_conversation,
        }
        if attachments:
            from ..pipeline.incoming import drop_folder_message

            files = []
            for path in attachments:
                try:
                    files.append((path.name, path.read_bytes()))
                except OSError as exc:
                    raise MessageError(
                        f"cannot attach {path}: {exc.strerror or type(exc).__name__}"
                    ) from exc
            drop_folder_message(self.home.inbox, text, files, message_id=message_id, **fields)
        else:
            drop_message(self.home.inbox, text, message_id=message_id, **fields)
        return message_id

    def follow_from_now(self, message_id: str) -> None:
        """Follow ``message_id`` from here on: its earlier events are not yielded again."""
        self._sent_after[message_id] = self._events.latest_id()

    def follow(
        self,
        message_id: str,
        *,
        timeout: float,
        stop: threading.Event | None = None,
        seen: set[str] | None = None,
    ) -> Iterator[Progress]:
        """Yield what happens to ``message_id``: each reply as it is written (ending with the
        final one) unless its id is in ``seen`` (each yielded id is added), each tool the agent
        calls, and each failed attempt to be retried.

        Stops early (without a final reply) at ``timeout`` or when ``stop`` is set.
        """
        seen = set() if seen is None else seen
        after = self._sent_after.get(message_id)
        if after is None:
            after = self._events.latest_id()
        deadline = time.monotonic() + timeout
        answering = [message_id]  # and the message whose turn took this one (busy policy)
        while True:
            for event in self._events.since(after):
                after = event.id or after
                if event.message_id not in answering:
                    continue
                if event.type in ("message_collected", "message_steered"):
                    answering.append(str(event.data.get("answered_by")))
                elif event.type == "tool_called":
                    yield ToolCalled(str(event.data.get("tool", "")))
                elif event.type == "turn_deferred":
                    due = event.data.get("next_attempt_at")
                    yield Retrying(
                        int(event.data.get("attempts") or 0),
                        str(event.data.get("error", "")),
                        parse_time(due) if due else None,
                    )
            for item in (i for source in answering for i in self._outbox.items_for(source)):
                if item.id in seen:
                    continue
                seen.add(item.id)
                yield item
                if item.final:
                    return
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                return
            time.sleep(POLL_SECONDS)


class InProcessDaemon:
    """A daemon in a background thread, for a chat when none is running.

    ``grace`` is how long a stop may wait for a turn in progress (``shutdown_grace_seconds``).
    """

    def __init__(self, home: Home, *, grace: float) -> None:
        from ..daemon import Daemon

        self.daemon = Daemon(home, handle_signals=False)
        self.grace = grace
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="smarthole-daemon", daemon=True)

    def _run(self) -> None:
        try:
            self.daemon.run()
        except BaseException as exc:
            self.error = exc

    def start(self) -> None:
        """Start the daemon; its start-up error (bad config, no API key...) is raised here."""
        self._thread.start()
        self.daemon.ready.wait()
        if not self.daemon.started:
            self._thread.join()
            if self.error is not None:
                raise self.error
            raise DaemonError("the in-process daemon stopped while starting")

    @property
    def root(self) -> Runtime:
        """The daemon's composition root: the chat reads and writes through it, so this process
        opens its store once."""
        if self.daemon.runtime is None:
            raise DaemonError("the in-process daemon has not started")
        return self.daemon.runtime

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the daemon to stop; True once it has, False if it still runs after ``timeout``."""
        self.daemon.request_stop()
        self._thread.join(timeout)
        return not self._thread.is_alive()
