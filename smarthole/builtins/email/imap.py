"""One IMAP connection to the folder the channel reads (the only importer of ``imapclient``).

IMAPClient speaks the protocol; this module says what the channel needs of it: the folder's
UIDVALIDITY and its unseen UIDs, a mail's size, headers or bytes (always ``BODY.PEEK``, so
reading marks nothing), ``\\Seen`` once the mail is taken, a move, and IDLE until the server
says something changed.
"""

from __future__ import annotations

import contextlib
import imaplib
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any

CONNECT_TIMEOUT = 30.0
IDLE_SLICE = 1.0  # IDLE is checked this often for a stop (a read with a timeout, not a sleep)
ERRORS: tuple[type[BaseException], ...] = (imaplib.IMAP4.error, OSError, EOFError)
"""What a lost or refused connection raises (IMAPClient's errors are imaplib's)."""


@dataclass(frozen=True)
class Account:
    host: str
    port: int
    tls: str  # tls, starttls or none
    user: str
    password: str
    folder: str
    context: ssl.SSLContext | None = None  # verifying; the system's CAs when None


class Mailbox:
    """A logged-in connection with ``folder`` selected; :meth:`close` ends it."""

    def __init__(self, account: Account) -> None:
        from imapclient import IMAPClient  # only a home with [email] enabled loads it

        context = None
        if account.tls != "none":
            context = account.context or ssl.create_default_context()
        self.client: Any = IMAPClient(
            account.host,
            port=account.port,
            ssl=account.tls == "tls",
            ssl_context=context,
            timeout=CONNECT_TIMEOUT,
        )
        try:
            if account.tls == "starttls":
                self.client.starttls(context)
            self.client.login(account.user, account.password)
            self.capabilities = set(self.client.capabilities())
            selected = self.client.select_folder(account.folder)
        except BaseException:
            self.close()
            raise
        self.folder = account.folder
        self.uidvalidity = int(selected[b"UIDVALIDITY"])

    def close(self) -> None:
        try:
            self.client.logout()
        except Exception:
            with contextlib.suppress(Exception):
                self.client.shutdown()

    def unseen(self) -> list[int]:
        return sorted(int(uid) for uid in self.client.search(["UNSEEN"]))

    def uids(self) -> list[int]:
        """Every UID in the folder, read or not."""
        return sorted(int(uid) for uid in self.client.search(["ALL"]))

    def size(self, uid: int) -> int:
        found = self.client.fetch([uid], ["RFC822.SIZE"]).get(uid, {})
        return int(found.get(b"RFC822.SIZE", 0))

    def headers(self, uid: int) -> bytes:
        found = self.client.fetch([uid], ["BODY.PEEK[HEADER]"]).get(uid, {})
        return bytes(found.get(b"BODY[HEADER]", b""))

    def fetch(self, uid: int) -> bytes | None:
        """The mail's bytes; None if it is gone (deleted meanwhile)."""
        found = self.client.fetch([uid], ["BODY.PEEK[]"]).get(uid)
        return bytes(found[b"BODY[]"]) if found and b"BODY[]" in found else None

    def mark_seen(self, uid: int) -> None:
        self.client.add_flags([uid], [b"\\Seen"])

    def move(self, uid: int, folder: str) -> None:
        if not self.client.folder_exists(folder):
            self.client.create_folder(folder)
        if b"MOVE" in self.capabilities:
            self.client.move([uid], folder)
        else:
            self.client.copy([uid], folder)
            self.client.delete_messages([uid])
            self.client.expunge([uid])

    def wait(self, seconds: float, stopping: threading.Event) -> None:
        """Until the server tells of a change, ``seconds`` pass or ``stopping`` is set: IDLE
        when the server has it, else a wait for the next periodic check."""
        if b"IDLE" not in self.capabilities:
            stopping.wait(seconds)
            return
        self.client.idle()
        # A change made just before IDLE began is told with its "+ idling", in one read: it
        # waits in imaplib's buffer, where IMAPClient's poll of the socket cannot see it.
        changed = _buffered(self.client)
        deadline = time.monotonic() + seconds
        while not changed and not stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            wait = min(IDLE_SLICE, left)
            began = time.monotonic()
            changed = bool(self.client.idle_check(timeout=wait))
            # Readable at once, yet nothing read: the server closed the connection (IMAPClient
            # swallows the EOF); ending IDLE raises it, and the channel reconnects.
            changed = changed or time.monotonic() - began < wait / 2
        self.client.idle_done()


def _buffered(client: Any) -> bool:
    """Whether bytes from the server already wait in imaplib's read buffer."""
    file = getattr(getattr(client, "_imap", None), "file", None)
    peek = getattr(file, "peek", None)
    if peek is None:
        return False
    sock = client.socket()
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return bool(peek(1))
    except OSError:  # nothing buffered, and nothing to read without waiting
        return False
    finally:
        sock.settimeout(timeout)
