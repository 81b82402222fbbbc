"""The email channel: a reader thread on IMAP (IDLE, with a full check as the fallback and
after every reconnect) and a sender thread on SMTP, both owned and joined by the channel.

Sending a reply: the thread record of its Message-ID (``sent:<id>``, so a reply to it finds
its conversation) commits first, then the SMTP hand-over, then ``sent``. A crash between the
hand-over and ``sent`` sends it again after the restart with the same Message-ID (derived from
the reply's id): mail clients show one message. A reply recorded as sent is never sent again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ...backoff import Backoff
from ...channels import Channel, ChannelState
from ...channels.host import due_in
from ...formats import iso
from .compose import compose, reply_message_id
from .imap import ERRORS, Account, Mailbox
from .intake import SENT, MailIntake
from .prune import Pruner
from .secret import read_password
from .smtp import Sender, Server, SmtpFailure
from .tls import client_context, untrusted

if TYPE_CHECKING:
    from ...channels import ChannelHost, Delivery
    from ...config.email import EmailSettings
    from ...db.store import Store

logger = logging.getLogger(__name__)

RECONNECT = Backoff(base=1.0, cap=60.0, jitter=0.1)  # seconds: the IMAP connection's retries
IDLE_MAX = 25 * 60.0  # RFC 2177: end IDLE before the server's 30-minute timeout
SENDER_IDLE = 60.0
STOP_TIMEOUT = 30.0


class EmailChannel(Channel):
    """Mail in from one IMAP folder, replies out by SMTP in the same thread."""

    name = "email"

    def __init__(self, settings: EmailSettings, env: Mapping[str, str], home_root: Path) -> None:
        self.settings = settings
        self.env = env
        self.home_root = home_root
        self.stopping = threading.Event()
        self.woken = threading.Event()
        self.threads: list[threading.Thread] = []

    def start(self, host: ChannelHost) -> None:
        super().start(host)
        settings = self.settings
        password = read_password(
            settings.password_env, settings.password_file, self.env, self.home_root
        )
        context = client_context(settings.ca_file, self.home_root)
        self.account = Account(
            settings.imap_host,
            settings.imap_port,
            settings.imap_tls,
            settings.login,
            password,
            settings.folder,
            context,
        )
        self.server = Server(
            settings.smtp_host,
            settings.smtp_port,
            settings.smtp_tls,
            settings.smtp_login,
            password,
            context,
        )
        self.intake = MailIntake(host, settings)
        self.pruner = Pruner(host)
        host.records.prune(host.now())
        host.set_status(
            ChannelState.CONNECTING, address=settings.address, folder=settings.folder,
            mode=settings.channel, last_error=None,
        )  # fmt: skip
        for target, name in ((self._read, "in"), (self._send, "out")):
            thread = threading.Thread(target=target, name=f"smarthole-email-{name}", daemon=True)
            self.threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.woken.set()
        for thread in self.threads:
            thread.join(STOP_TIMEOUT)
            if thread.is_alive():
                logger.warning("email: thread %s did not stop in %.0fs", thread.name, STOP_TIMEOUT)

    def wake(self) -> None:
        self.woken.set()

    # -- in ----------------------------------------------------------------------------------

    def _read(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            try:
                box = Mailbox(self.account)
            except ERRORS as exc:
                failures += 1
                self._lost(f"cannot connect to {self.account.host}: {_describe(exc)}", failures)
                continue
            reason = "smarthole is stopping"
            try:
                self._connected()
                failures = 0
                self._serve(box)
            except ERRORS as exc:
                failures += 1
                reason = f"the IMAP connection ended: {_describe(exc)}"
            except Exception:  # a bug or a fault of the store: logged, retried like a loss
                failures += 1
                logger.exception("email: reading the folder failed")
                reason = "reading the folder failed (see the log)"
            finally:
                box.close()
            self._lost(reason, failures, connected=True)
        self.host.set_status(ChannelState.DISABLED, last_error="smarthole is stopping")

    def _connected(self) -> None:
        """The state and its event in one commit: whoever sees one sees the other."""
        account = self.account
        with self.host.records.store.transaction():
            self.host.set_status(ChannelState.CONNECTED, last_error=None)
            self.host.event(
                "channel_connected", imap_host=account.host, folder=account.folder, tls=account.tls
            )

    def _serve(self, box: Mailbox) -> None:
        """A full check, then IDLE and a check after each change, until stopped."""
        wait = min(self.settings.check_seconds, IDLE_MAX)
        while not self.stopping.is_set():
            self.pruner.maybe(box)
            self.intake.check(box)
            self.woken.set()  # an unusable mail's answer may wait
            box.wait(wait, self.stopping)

    def _lost(self, reason: str, failures: int, *, connected: bool = False) -> None:
        """A connection failed (or ``connected``: one that was up ended); a wait, unless
        stopping. The event tells only of a connection that was up, as the desktop bridge's:
        an outage is one event, however often the reconnect fails."""
        stopping = self.stopping.is_set()
        with self.host.records.store.transaction():
            if connected:
                self.host.event("channel_disconnected", reason=reason)
            if not stopping:
                self.host.set_status(ChannelState.ERROR, last_error=reason)
        if stopping:
            return
        delay = RECONNECT.delay(failures)
        logger.warning("email: %s; trying again in %.1fs", reason, delay)
        self.stopping.wait(delay)

    # -- out ---------------------------------------------------------------------------------

    def _files(self, delivery: Delivery) -> list[tuple[str, bytes]]:
        """What the turn wrote goes with its final reply."""
        if delivery.kind != "response" or not delivery.conversation or delivery.turn is None:
            return []
        from ...home import Home
        from .outfiles import turn_files

        host = self.host
        return turn_files(
            host.records.store,
            delivery.conversation,
            delivery.turn,
            Home(self.home_root).workspace,
            host.attachments,
        )

    def _send(self) -> None:
        while not self.stopping.is_set():
            try:
                self._send_due()
            except Exception:  # a fault of the store: logged, tried again
                logger.exception("email: sending replies failed")
            self.woken.wait(due_in(self.host, SENDER_IDLE))
            self.woken.clear()

    def _send_due(self) -> None:
        due = self.host.due()
        if not due:
            return
        try:
            with Sender(self.server) as smtp:
                for delivery in due:
                    if self.stopping.is_set():
                        return
                    self._send_one(smtp, delivery)
        except SmtpFailure as exc:  # no connection: every one of them waits for the next try
            for delivery in self.host.due():
                self._failed(delivery, str(exc))

    def _send_one(self, smtp: Sender, delivery: Delivery) -> None:
        recipient = delivery.origin.get("from")
        if not isinstance(recipient, str):
            self.host.sent(delivery, skipped="the mail it answers has no sender")
            return
        message = compose(delivery, self.settings.address, self._files(delivery))
        message_id = reply_message_id(delivery.outbox_id, self.settings.address)
        self.host.records.data.set(
            SENT + message_id,
            {
                "conversation": delivery.conversation,
                "approval": delivery.extra.get("approval"),
                "args_hash": delivery.extra.get("args_hash"),
                "at": iso(self.host.now()),
            },
        )
        if delivery.conversation and delivery.origin.get("new_thread"):
            _title(self.host.records.store, delivery.conversation, delivery.origin)
        try:
            smtp.send(message, self.settings.address, recipient)
        except SmtpFailure as exc:
            self._failed(delivery, str(exc))
            return
        with self.host.records.store.transaction():
            self.host.sent(delivery, message_id=message_id)
            self.host.event("delivery_sent", mail_id=message_id, **_about(delivery))
        logger.info("email: sent %s to %s as %s", delivery.outbox_id, recipient, message_id)

    def _failed(self, delivery: Delivery, error: str) -> None:
        with self.host.records.store.transaction():
            self.host.failed(delivery, error)
            self.host.event("delivery_failed", error=error, **_about(delivery))


def _about(delivery: Delivery) -> dict[str, object]:
    """The fields of a delivery's events: where it belongs, which try this was."""
    named = ("conversation", "message_id", "outbox_id", "kind")
    return {**{name: getattr(delivery, name) for name in named}, "attempt": delivery.attempts + 1}


def _title(store: Store, conversation: str, origin: dict[str, object]) -> None:
    """The subject is the conversation's title, unless one is generated (or was chosen)."""
    subject = origin.get("subject")
    if isinstance(subject, str) and subject.strip():
        store.set_title_if_untitled(conversation, subject.strip())


def _describe(exc: BaseException) -> str:
    refused = untrusted(exc)
    if refused is not None:
        return refused
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
