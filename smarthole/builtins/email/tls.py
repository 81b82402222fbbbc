"""The TLS context of both connections (IMAP and SMTP), made once when the channel starts.

``ca_file`` names a PEM file of the certificate authorities to trust *instead of* the system's
store (a home server with a private CA); empty means the system's store. Either way the server's
certificate and host name are checked: an untrusted server is refused before a password or a
mail crosses the connection.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from ...errors import ConfigError


def client_context(ca_file: str, home_root: Path) -> ssl.SSLContext:
    """A verifying client context; ``ConfigError`` naming the file when ``ca_file`` is unusable."""
    if not ca_file:
        return ssl.create_default_context()
    path = home_root / Path(ca_file).expanduser()
    if not path.is_file():
        raise ConfigError(f"[email] ca_file {path} does not exist (or is not a file)")
    try:
        return ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(
            f"[email] ca_file {path} holds no usable PEM certificates: {exc}"
        ) from exc


def untrusted(exc: BaseException) -> str | None:
    """Why the server's certificate was refused, in words, or None for any other failure."""
    if not isinstance(exc, ssl.SSLCertVerificationError):
        return None
    said = exc.verify_message or exc.reason or str(exc)
    return f"the server's certificate is not trusted ({said}); ca_file names CAs to trust"
