"""Sending a reply by SMTP (the standard library's ``smtplib``): one connection a batch.

Every failure (a refused login, a 4xx or 5xx answer, a lost connection) is an ``SmtpFailure``
with a one-line reason that never holds the password; the channel tries again after the
shared backoff and ``smarthole status`` shows the reason meanwhile.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from types import TracebackType

from ...errors import SmartholeError
from .tls import untrusted

TIMEOUT = 30.0


class SmtpFailure(SmartholeError):
    """A reply could not be handed to the SMTP server; the message says why."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    tls: str  # tls, starttls or none
    user: str
    password: str
    context: ssl.SSLContext | None = None  # verifying; the system's CAs when None


class Sender:
    """A connection to the SMTP server, logged in, for ``with``."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.smtp: smtplib.SMTP | None = None

    def __enter__(self) -> Sender:
        server = self.server
        context = server.context or ssl.create_default_context()
        try:
            if server.tls == "tls":
                self.smtp = smtplib.SMTP_SSL(
                    server.host, server.port, timeout=TIMEOUT, context=context
                )
            else:
                self.smtp = smtplib.SMTP(server.host, server.port, timeout=TIMEOUT)
                if server.tls == "starttls":
                    self.smtp.starttls(context=context)
            self.smtp.ehlo_or_helo_if_needed()
            if self.smtp.has_extn("auth"):  # a local relay without AUTH takes mail as it is
                self.smtp.login(server.user, server.password)
        except (smtplib.SMTPException, OSError) as exc:
            self._quit()
            raise SmtpFailure(f"{server.host}:{server.port}: {_reason(exc)}") from None
        return self

    def send(self, message: EmailMessage, sender: str, recipient: str) -> None:
        assert self.smtp is not None
        try:
            refused = self.smtp.send_message(message, from_addr=sender, to_addrs=[recipient])
        except (smtplib.SMTPException, OSError) as exc:
            raise SmtpFailure(_reason(exc)) from None
        if refused:
            raise SmtpFailure(f"the server refused {recipient}: {refused[recipient]!r}")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._quit()

    def _quit(self) -> None:
        if self.smtp is not None:
            try:
                self.smtp.quit()
            except (smtplib.SMTPException, OSError):
                self.smtp.close()
            self.smtp = None


def _reason(exc: BaseException) -> str:
    refused = untrusted(exc)
    if refused is not None:
        return refused
    if isinstance(exc, smtplib.SMTPResponseException):
        said = exc.smtp_error
        text = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
        return f"{exc.smtp_code} {' '.join(text.split())[:200]}"
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
