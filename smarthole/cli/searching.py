"""``smarthole search`` and ``resume --search``: the times it takes, and the hits as text."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from ..db.search import SearchHit
from ..errors import UsageError
from .common import title_line
from .output import one_line

_AGO = re.compile(r"(\d{1,6})([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def since_time(text: str, now: datetime) -> datetime:
    """``--since``: a date (local midnight), a local or zoned ISO time, or an age (``90m``,
    ``12h``, ``7d``, ``2w``)."""
    text = text.strip()
    ago = _AGO.fullmatch(text)
    if ago:
        return now - timedelta(**{_UNITS[ago.group(2)]: int(ago.group(1))})
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--since takes a date (2026-11-20), a time (2026-11-20T08:00) or an age "
            f"(12h, 7d, 2w), not {one_line(text)!r}"
        ) from None
    return moment if moment.tzinfo else moment.astimezone()  # naive: the local time


def hit_lines(hits: list[SearchHit], *, numbered: bool = True) -> str:
    """Each hit as two lines: where and when, then its snippet with the matches in ``**``."""
    lines = []
    for number, hit in enumerate(hits, start=1):
        head = f"{number}. " if numbered else ""
        lines.append(
            f"{head}{title_line(hit.title)} · {hit.at.astimezone():%Y-%m-%d %H:%M} · "
            f"{one_line(hit.who)} · [{one_line(hit.channel)}] {hit.conversation_id}"
        )
        lines.append(f"   {one_line(hit.marked())}")
    return "\n".join(lines)


def per_conversation(hits: list[SearchHit]) -> list[SearchHit]:
    """The best hit of each conversation, in the hits' order."""
    seen: set[str] = set()
    best = []
    for hit in hits:
        if hit.conversation_id not in seen:
            seen.add(hit.conversation_id)
            best.append(hit)
    return best
