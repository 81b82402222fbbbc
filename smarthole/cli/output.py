"""What the CLI writes: text for a terminal, and JSON for programs.

Stored text is untrusted: a title comes from the model, and the model reads whatever anyone
dropped into the inbox. So nothing the CLI prints may act on the terminal. Single-line fields
(titles, names, reasons) go through :func:`one_line`; everything a command writes to stdout
then passes :class:`VisibleOutput`, which shows any control character left (keeping newline
and tab) — one place, so a new command cannot forget. JSON is exact: its escapes are text.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import Any, TextIO

from ..formats import visible

BODY = "\n\t"  # what a body of text keeps; everything else is shown
# JSON leaves DEL and C1 raw when ensure_ascii is off; escaped, the output stays exact JSON and
# the terminal sees only text.
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f]")


def one_line(text: object) -> str:
    """A field shown on one line: every control character, newline and tab too, visible."""
    return visible(str(text))


def short(value: object, limit: int = 60) -> str:
    """A field on one line, at most ``limit`` characters (newlines read as spaces), cut at a
    word with ``…``."""
    text = one_line(" ".join(str(value).split()))
    if len(text) <= limit:
        return text
    kept = text[: limit - 1]
    space = kept.rfind(" ")
    ends_a_word = text[limit - 1] == " "
    if not ends_a_word and space > limit // 2:  # else a long word is cut inside
        kept = kept[:space]
    return kept.rstrip(" ,;:.-") + "…"


def clock(moment: datetime, now: datetime) -> str:
    """A time for people, local: ``06:52`` today, ``tomorrow 06:52``, ``yesterday 06:52``,
    else with its date (``2026-12-01 06:52``): a time that is not today carries its day."""
    here, today = moment.astimezone(), now.astimezone().date()
    days = (here.date() - today).days
    if days == 0:
        return f"{here:%H:%M}"
    if days in (1, -1):
        return f"{'tomorrow' if days == 1 else 'yesterday'} {here:%H:%M}"
    return f"{here:%Y-%m-%d %H:%M}"


_FENCE = re.compile(r"\s*```[\w-]*\s*")
_STRONG = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")


def plain(markdown: str) -> str:
    """Markdown as plain terminal text: code fences and bold markers dropped, the rest as is
    (what a person reads in a terminal; files and the web view keep the Markdown)."""
    lines = [line for line in markdown.split("\n") if not _FENCE.fullmatch(line)]
    return _STRONG.sub(lambda m: m.group(1) or m.group(2), "\n".join(lines))


def body(text: str) -> str:
    """A body of text: newlines and tabs kept, every other control character visible."""
    return visible(text, keep=BODY)


def dumps(data: Any, *, indent: int | None = 2) -> str:
    """``data`` as JSON with non-ASCII text readable and no raw control character in it."""
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(data: Any) -> None:
    print(dumps(data))


class VisibleOutput:
    """A text stream that shows control characters instead of sending them to ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(body(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)  # flush, fileno, isatty, encoding, buffer...


@contextlib.contextmanager
def visible_stdout() -> Iterator[None]:
    """``sys.stdout`` shows control characters while the block runs."""
    original = sys.stdout
    sys.stdout = VisibleOutput(original)
    try:
        yield
    finally:
        sys.stdout = original
