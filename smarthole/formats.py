"""The formats every layer shares: TOML, times, ids, names, and text from outside made safe.

Times are timezone-aware UTC ``datetime`` values inside, and fixed-width ISO strings in the
database and in files (fixed width keeps SQLite's text ordering right); the two busiest tables
(messages and turns) keep them as integer microseconds (:func:`micros`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from .errors import ConfigError, DocumentError

FRONT_MATTER_FENCE = "+++"

# -- TOML ------------------------------------------------------------------------------------


def loads_toml(text: str, *, source: str) -> dict[str, Any]:
    """Parse TOML text; ``source`` names where it came from in the error."""
    try:
        return tomllib.loads(text)
    except RecursionError as exc:
        raise ConfigError(f"{source}: invalid TOML: nested too deeply to read") from exc
    except ValueError as exc:  # TOMLDecodeError, or an integer of over 4,300 digits
        raise ConfigError(f"{source}: invalid TOML: {_first_line(exc)}") from exc


def loads_json(text: str, *, source: str) -> Any:
    """Parse JSON from outside; ``DocumentError`` names ``source`` and what is wrong.

    Besides bad syntax, Python's parser refuses a number of over 4,300 digits (ValueError) and
    runs out of stack on deep nesting (RecursionError): both are the document's fault too.
    """
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise DocumentError(f"{source} is nested too deeply to read") from exc
    except ValueError as exc:
        raise DocumentError(f"{source} is not JSON: {_first_line(exc)}") from exc


def _first_line(exc: Exception, limit: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dumps_toml(data: dict[str, Any]) -> str:
    import tomli_w

    return tomli_w.dumps(data, multiline_strings=True)


# -- times -----------------------------------------------------------------------------------

Clock = Callable[[], datetime]


def compact_json(value: Any, **options: Any) -> str:
    """JSON without the spaces after separators: what the store keeps, row after row."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), **options)


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """A UTC time as a fixed-width ISO string; fixed width keeps SQLite ordering right."""
    # isoformat pads the year to four digits; strftime's %Y does not on every platform.
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """A time as whole microseconds since 1970 UTC: the compact form of the busiest tables.

    Exact at ``iso``'s precision, so ``from_micros(micros(t)) == t`` for every stored time.
    """
    return (moment - EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


# -- ids and names ---------------------------------------------------------------------------


def new_id() -> str:
    """A short random id; people type prefixes of these."""
    return secrets.token_hex(8)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def derive_id(name: str, data: bytes, modified: datetime) -> str:
    """An id for a file without one: each arrival of a file is a new message.

    Only the same name, the same bytes and the same modification time give the same id: that
    is a file put back as it was (a sync tool restoring it), not "yes" written twice.
    """
    stamp = iso(modified).encode()
    digest = hashlib.sha256(os.fsencode(name) + b"\0" + stamp + b"\0" + data).hexdigest()
    return f"m-{digest[:24]}"


def display_name(name: str) -> str:
    """A file name as text that can be stored and shown: undecodable bytes become U+FFFD."""
    return os.fsencode(name).decode("utf-8", errors="replace")


# -- Text from outside -------------------------------------------------------------------------

# C0 controls, DEL and C1 controls: what a terminal may act on instead of showing (ESC starts a
# sequence that can set the window title, clear the screen or write the clipboard; 0x9b is a
# one-character CSI on terminals that honour C1).
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def has_control_characters(text: str) -> bool:
    return CONTROL_CHARACTERS.search(text) is not None


def visible(text: str, *, keep: str = "") -> str:
    """``text`` with its control characters shown, not sent: C0 and DEL in caret notation
    (ESC as ``^[``, NUL as ``^@``, DEL as ``^?``, as ``cat -v`` shows them), C1 as ``\\x9b``.
    Characters in ``keep`` (say ``"\\n\\t"`` for a body of text) stay as they are."""
    if not CONTROL_CHARACTERS.search(text):
        return text  # the common case, without building anything
    return CONTROL_CHARACTERS.sub(lambda m: _shown(m.group(), keep), text)


def _shown(char: str, keep: str) -> str:
    if char in keep:
        return char
    code = ord(char)
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    return f"\\x{code:02x}"


def without_control_characters(text: str) -> str:
    """``text`` with each control character (newlines too) turned into a space."""
    return CONTROL_CHARACTERS.sub(" ", text)


DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    """Seconds of a duration written ``30s``, ``15m``, ``2h`` or ``7d``; ``ValueError`` if not."""
    match = DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 30s, 15m, 2h or 7d")
    return float(match[1]) * DURATION_UNITS[match[2]]


def args_hash(tool: str, arguments: Any) -> str:
    """SHA-256 of the canonical JSON (sorted keys, no spaces, UTF-8) of a tool call."""
    call = {"tool": tool, "input": arguments}
    canonical = json.dumps(call, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
