"""A PDF's pages, counted from its bytes in time linear in its size, or why they cannot be.

No PDF parser reads an untrusted file here (pypdf takes seconds to give up on a hostile
32 MiB file). The page objects (``/Type /Page``) are counted, in the file and in its
Flate-compressed object streams (PDF 1.5+: pdfTeX, qpdf and others keep every dictionary
there); a file with none is counted by its page tree's ``/Count``. Every step is bounded: one
scan of the bytes finds every ``/Type`` worth a look (no pattern runs on past a match to look
for a closing ``>``, the quadratic trap of the regex this replaced), and there may be at most
:data:`MAX_TYPES` of them; a page tree node's dictionary is looked for within :data:`WINDOW`
bytes; the object streams may read and inflate :data:`INFLATE_BUDGET` bytes in all. A file
that cannot be counted within those bounds is refused with the reason, never taken as having
no pages.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass, field

from ..errors import MessageError

TYPE = b"/Type"
TYPED = re.compile(rb"/Type\s{0,32}/(Pages|Page|ObjStm)(?![A-Za-z])")
COUNT = re.compile(rb"/Count\s+(\d{1,9})")
STREAM = re.compile(rb"stream\r?\n")
MAX_TYPES = 100_000  # /Type keys in the file, or in one object stream
MAX_NODES = 1_000  # page tree nodes, and object streams
WINDOW = 4096  # a dictionary's reach around its /Type, in bytes
INFLATE_BUDGET = 32 * 1024 * 1024  # what the object streams may read and inflate, together
CHUNK = 64 * 1024  # zlib is fed this much at a time (it copies what it leaves unread)


class Uncountable(Exception):
    """The pages cannot be counted within the bounds; the message says why."""


def pdf_pages(name: str, data: bytes) -> int:
    """The pages of PDF ``data``; ``MessageError`` naming ``name`` if they cannot be counted."""
    try:
        pages = _count(data)
    except Uncountable as exc:
        raise MessageError(f"{name}: cannot count its pages ({exc}); it is refused") from exc
    if pages == 0:
        raise MessageError(
            f"{name}: cannot count its pages (no page object or page tree count found); "
            "it is refused"
        )
    return pages


@dataclass
class _Tally:
    pages: int = 0
    tree: int = 0  # the largest /Count of a page tree node: the root's, in a well-formed file
    streams: list[int] = field(default_factory=list)  # where object streams' bytes begin


def _count(data: bytes) -> int:
    tally = _Tally()
    _scan(data, tally)
    budget = INFLATE_BUDGET
    for start in tally.streams:
        content, budget = _inflate(memoryview(data)[start:], budget)
        _scan(content, tally)
    return tally.pages or tally.tree


def _scan(data: bytes, tally: _Tally) -> None:
    if data.count(TYPE) > MAX_TYPES:
        raise Uncountable(f"more than {MAX_TYPES} /Type keys")
    nodes = 0
    for found in TYPED.finditer(data):
        kind = found.group(1)
        if kind == b"Page":
            tally.pages += 1
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise Uncountable(f"more than {MAX_NODES} page tree nodes and object streams")
        if kind == b"Pages":
            tally.tree = max(tally.tree, _node_count(data, found))
        elif stream := STREAM.search(data, found.end(), found.end() + WINDOW):
            tally.streams.append(stream.end())


def _node_count(data: bytes, node: re.Match[bytes]) -> int:
    start = data.rfind(b"<<", max(0, node.start() - WINDOW), node.start())
    end = data.find(b">>", node.end(), node.end() + WINDOW)
    if start < 0 or end < 0 or not (count := COUNT.search(data, start, end)):
        return 0
    return int(count.group(1))


def _inflate(stream: memoryview, budget: int) -> tuple[bytes, int]:
    """One Flate stream's content (empty if it is not one), and what is left of the budget."""
    inflater = zlib.decompressobj()
    content = bytearray()
    at = 0
    while not inflater.eof and at < len(stream):
        chunk = stream[at : at + CHUNK]
        try:
            out = inflater.decompress(chunk, budget + 1)
        except zlib.error:
            return b"", budget  # not Flate, or damaged: what the plain scan saw is all there is
        used = len(chunk) - len(inflater.unconsumed_tail)
        budget -= used + len(out)
        if budget < 0:
            raise Uncountable(f"its object streams read and inflate over {INFLATE_BUDGET} bytes")
        if not used:
            break
        content += out
        at += used
    return bytes(content), budget
