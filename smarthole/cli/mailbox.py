"""Talking to the daemon from a terminal: ``send --wait``, ``chat`` and ``resume``.

Every message goes through the inbox like any other, and replies are read from the store's
outbox record, so a terminal conversation is processed exactly like a dropped file. If no
daemon is running, ``chat`` runs one in-process for the session's length.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from ..db.outbox import OutboxItem, OutboxRecord
from ..db.store import Store
from ..errors import DaemonError
from ..home import Home
from ..pipeline.inbox import drop_message
from .output import body

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05


def new_message_id() -> str:
    return str(uuid.uuid4())


class Mailbox:
    """Drops messages into a home's inbox and waits for their replies."""

    def __init__(self, home: Home, store: Store) -> None:
        self.home = home
        self.store = store
        self._outbox = OutboxRecord(home, store)

    def send(
        self,
        text: str,
        *,
        channel: str | None = None,
        conversation: str | None = None,
        new_conversation: bool = False,
        message_id: str | None = None,
    ) -> str:
        message_id = message_id or new_message_id()
        drop_message(
            self.home.inbox,
            text,
            message_id=message_id,
            channel=channel,
            conversation=conversation,
            new_conversation=new_conversation,
        )
        return message_id

    def replies(
        self, message_id: str, *, timeout: float, stop: threading.Event | None = None
    ) -> Iterator[OutboxItem]:
        """Yield each reply to ``message_id`` as it is written, ending with the final one.

        Stops early (without a final reply) at ``timeout`` or when ``stop`` is set.
        """
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        while True:
            for item in self._outbox.items_for(message_id):
                if item.id in seen:
                    continue
                seen.add(item.id)
                yield item
                if item.final:
                    return
            if time.monotonic() >= deadline or (stop is not None and stop.is_set()):
                return
            time.sleep(POLL_SECONDS)


@dataclass
class ChatSession:
    """One terminal conversation; ``run`` reads lines until end of input."""

    home: Home
    store: Store
    channel: str
    conversation_id: str | None
    reader: Callable[[], str | None]
    out: TextIO
    timeout: float = 600.0
    stop: threading.Event = field(default_factory=threading.Event)
    last_message_id: str | None = None
    timed_out: bool = False

    def current_conversation(self) -> str | None:
        """The conversation of this chat, once its first message has a turn."""
        if self.conversation_id is None and self.last_message_id is not None:
            turn = self.store.turn_for_message(self.last_message_id)
            self.conversation_id = turn.conversation_id if turn else None
        return self.conversation_id

    def run(self) -> None:
        mailbox = Mailbox(self.home, self.store)
        while not self.stop.is_set():
            line = self.reader()
            if line is None:
                return
            text = line.strip()
            if not text:
                continue
            message_id = mailbox.send(
                text,
                channel=self.channel,
                conversation=self.conversation_id,
                new_conversation=self.conversation_id is None,
            )
            self.last_message_id = message_id
            if not self._show_replies(mailbox, message_id):
                return

    def _show_replies(self, mailbox: Mailbox, message_id: str) -> bool:
        final = None
        for item in mailbox.replies(message_id, timeout=self.timeout, stop=self.stop):
            self.conversation_id = item.conversation or self.conversation_id
            label = {"question": "smarthole asks", "error": "smarthole (error)"}.get(
                item.kind, "smarthole"
            )
            self.out.write(f"{label}: {body(item.text)}\n\n")
            self.out.flush()
            final = item if item.final else final
        if final is None and not self.stop.is_set():
            self.timed_out = True
            self.out.write(
                f"(no reply within {self.timeout:g}s; the conversation is kept, and the reply "
                "will arrive in the outbox when the daemon gets to it)\n"
            )
            self.out.flush()
        return final is not None


class InProcessDaemon:
    """A daemon in a background thread, for a chat when none is running."""

    def __init__(self, home: Home) -> None:
        from ..daemon import Daemon

        self.daemon = Daemon(home, handle_signals=False)
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

    def stop(self) -> None:
        self.daemon.request_stop()
        self._thread.join()
