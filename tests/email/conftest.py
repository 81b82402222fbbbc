"""Fixtures of the email channel's tests: a real Dovecot, a real SMTP server, mail to send."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic  # noqa: F401 -- imported once here, not inside a daemon's 20 s to be ready
import pytest

from tests.helpers import write_config

from .servers import PASSWORD, Dovecot, MailServer, require_dovecot

AGENT = "agent@example.com"
ME = "me@example.com"
USERS = (AGENT, ME, "aunt@family.example", "stranger@elsewhere.test")


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    require_dovecot()
    server = Dovecot(USERS).start()
    yield server
    server.close()


@pytest.fixture
def smtp(dovecot: Dovecot) -> Iterator[MailServer]:
    server = MailServer(dovecot)
    yield server
    server.stop()


@pytest.fixture
def mail_env(env: dict[str, str]) -> dict[str, str]:
    """The daemon's environment, with the mail password where [email] password_env says."""
    return {**env, "SMARTHOLE_MAIL_PASSWORD": PASSWORD}


def enable_email(
    home: Path,
    dovecot: Dovecot,
    smtp: MailServer,
    sections: dict[str, dict[str, object]] | None = None,
    **settings: object,
) -> None:
    """A config.toml with [email] on these servers (and other ``sections``)."""
    sections = {
        **(sections or {}),
        "email": {
            "enabled": True,
            "address": AGENT,
            "imap_host": "127.0.0.1",
            "imap_port": dovecot.port,
            "imap_tls": "none",
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp.port,
            "smtp_tls": "none",
            "allow": [ME, "*@family.example"],
            "check_seconds": 30.0,
            **settings,
        },
    }
    write_config(home, **sections)
