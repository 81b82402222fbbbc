"""``[email]``: a mail account as a channel (``smarthole.builtins.email``; docs/email.md).

Checked here, at start: the hosts, ports and TLS modes, the allow list's shape, and that the
password is named (an environment variable or a 0600 file), never given. The password itself
is read when the channel starts, never kept in the config; so is ``ca_file`` (it must exist).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .fields import setting

TLS_MODES = ("tls", "starttls", "none")
LOOPBACK = ("127.0.0.1", "::1", "localhost")
CHANNEL_MODES = ("email", "per-sender")
ADDRESS = re.compile(r"[^@\s]+@[^@\s]+")
ALLOW_ENTRY = re.compile(r"(\*|[^@\s*]+)@[^@\s*]+")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MIB = 1024 * 1024


@dataclass(frozen=True)
class EmailSettings:
    enabled: bool = setting(False, "Take mail from an IMAP folder and answer it by SMTP.")
    address: str = setting("", "The agent's address: the From: of its replies.")
    imap_host: str = setting("", "The IMAP server.")
    imap_port: int = setting(993, "The IMAP port (993 with tls, 143 with starttls).", minimum=1)
    imap_tls: str = setting("tls", 'IMAP encryption: "tls", "starttls" or "none" (127.0.0.1).')
    imap_user: str = setting("", "The IMAP login; empty means the address.")
    smtp_host: str = setting("", "The SMTP server that sends the replies.")
    smtp_port: int = setting(465, "The SMTP port (465 with tls, 587 with starttls).", minimum=1)
    smtp_tls: str = setting("tls", 'SMTP encryption: "tls", "starttls" or "none" (127.0.0.1).')
    smtp_user: str = setting("", "The SMTP login; empty means imap_user.")
    ca_file: str = setting(
        "",
        "A PEM file of CAs to trust instead of the system's (a private CA); empty: the system's.",
    )
    password_env: str = setting(
        "SMARTHOLE_MAIL_PASSWORD", "The environment variable holding the password."
    )
    password_file: str = setting("", "Or a file (mode 0600) holding it; wins when set.")
    allow: list[str] = setting([], 'Senders taken: "me@example.com", "*@family.example".')
    require_authenticated: bool = setting(
        True, "Take only mail whose Authentication-Results say dkim=pass or spf=pass."
    )
    folder: str = setting("INBOX", "The folder read.")
    refused_folder: str = setting("", "Move refused mail here (left unread in folder if empty).")
    channel: str = setting("email", '"email", or "per-sender": a channel for each sender.')
    check_seconds: float = setting(
        300.0, "A full check this often, besides IDLE (and after every reconnect).", minimum=1
    )
    max_mail_bytes: int = setting(50 * MIB, "Larger mail is refused unread.", minimum=1024)

    def __post_init__(self) -> None:
        # build_settings turns a ValueError into "[email] <message>" in the ConfigError.
        for key in ("imap_tls", "smtp_tls"):
            if getattr(self, key) not in TLS_MODES:
                raise ValueError(f"{key} must be one of {', '.join(TLS_MODES)}")
        for mode, host in ((self.imap_tls, self.imap_host), (self.smtp_tls, self.smtp_host)):
            if mode == "none" and host and host not in LOOPBACK:
                raise ValueError(f'tls = "none" is only for 127.0.0.1, not {host!r}')
        if self.channel not in CHANNEL_MODES:
            raise ValueError('channel must be "email" or "per-sender"')
        for entry in self.allow:
            if not ALLOW_ENTRY.fullmatch(entry):
                raise ValueError(f"allow entry {entry!r} must be an address or *@domain")
        if not ENV_NAME.fullmatch(self.password_env):
            raise ValueError(f"password_env {self.password_env!r} must name a variable")
        if not self.enabled:
            return
        for key in ("address", "imap_host", "smtp_host"):
            if not getattr(self, key):
                raise ValueError(f"{key} is needed when enabled = true")
        if not ADDRESS.fullmatch(self.address):
            raise ValueError(f"address {self.address!r} is not a mail address")
        if not self.allow:
            raise ValueError("allow is empty: no sender could reach the agent")

    @property
    def login(self) -> str:
        return self.imap_user or self.address

    @property
    def smtp_login(self) -> str:
        return self.smtp_user or self.login
