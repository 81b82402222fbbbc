"""Where the web view listens, and its token: light enough for ``status`` and the parser.

The token is the only credential: whoever has it can make the agent act. It is random (256
bits), kept in ``.smarthole/web.token`` (0600, written atomically), and stays the same across
restarts so an open page or a bookmarked link keeps working; ``--new-token`` replaces it.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from dataclasses import dataclass

from ..fsutil import PRIVATE_FILE, atomic_write
from ..home import Home

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8470
TOKEN_FILE = "web.token"
TOKEN_BYTES = 32  # 256 bits; secrets.token_urlsafe makes 43 characters of them
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9_-]{22,128}")


@dataclass(frozen=True)
class WebSettings:
    """The ``[web]`` table: whether ``smarthole run`` serves the view, and where."""

    enabled: bool = False
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be between 0 and 65535 (got {self.port})")
        if not self.host.strip():
            raise ValueError("host must not be empty")

    @property
    def url(self) -> str:
        """The view's address, without the token (what ``status`` shows)."""
        return base_url(self.host, self.port)


def base_url(host: str, port: int) -> str:
    """``http://HOST:PORT`` (an IPv6 address in brackets)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def link(host: str, port: int, token: str) -> str:
    """The address that logs a browser in: it trades ``?token=`` for a cookie."""
    return f"{base_url(host, port)}/?token={token}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (so nobody else can reach the view)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(home: Home) -> str | None:
    """The stored token, or None if there is none (or it is not one we would have made)."""
    try:
        text = (home.state / TOKEN_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if TOKEN_PATTERN.fullmatch(text) else None


def ensure_token(home: Home, *, new: bool = False) -> str:
    """The home's token: the stored one, or a new one (stored first) when there is none or
    ``new`` asks for it."""
    if not new:
        token = read_token(home)
        if token is not None:
            return token
    token = secrets.token_urlsafe(TOKEN_BYTES)
    home.ensure()
    atomic_write(home.state / TOKEN_FILE, f"{token}\n".encode(), mode=PRIVATE_FILE)
    return token
