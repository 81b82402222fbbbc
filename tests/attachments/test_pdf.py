"""A PDF's pages are counted in time linear in its size, or the PDF is refused with the reason:
never taken as having no pages, never holding the other channels up."""

from __future__ import annotations

import pytest

from smarthole.attachments import accept
from smarthole.config import AttachmentSettings
from smarthole.errors import MessageError
from smarthole.testing import text
from tests.helpers import (
    compressed_pdf_bytes,
    drop,
    drop_folder,
    finals,
    pdf_bytes,
    wait_for,
    write_config,
)

MIB = 1024 * 1024
LIMITS = AttachmentSettings(max_pdf_pages=5)
NODES = "1000 page tree nodes and object streams"


def hostile(unit: bytes, size: int) -> bytes:
    """A PDF of ``size`` bytes that is ``unit`` over and over."""
    head, tail = b"%PDF-1.4\n", b"\n%%EOF\n"
    body = unit * ((size - len(head) - len(tail)) // len(unit))
    return head + body + b" " * (size - len(head) - len(body) - len(tail)) + tail


def tree_only(count: int) -> bytes:
    """A page tree's count and no page object (its pages kept where no scan looks)."""
    tree = f"1 0 obj\n<< /Count {count} /Type /Pages /Kids [] >>\nendobj\n".encode()
    return b"%PDF-1.4\n" + tree + b"%%EOF\n"


@pytest.mark.parametrize(
    ("data", "pages"),
    [
        (pdf_bytes(pages=1), 1),
        (pdf_bytes(pages=4), 4),
        (compressed_pdf_bytes(pages=1), 1),
        (compressed_pdf_bytes(pages=5), 5),
        (tree_only(3), 3),
    ],
    ids=["plain-1", "plain-4", "object-stream-1", "object-stream-5", "page-tree-count"],
)
def test_the_pages_are_counted_in_the_file_and_its_object_streams(data, pages):
    assert accept("a.pdf", data, LIMITS).media_type == "application/pdf"
    over = AttachmentSettings(max_pdf_pages=pages - 1 or 1) if pages > 1 else None
    if over is not None:
        with pytest.raises(MessageError, match=f"a.pdf: {pages} pages is more than max_pdf_pages"):
            accept("a.pdf", data, over)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        # The shape that took the old regex 1.4 s at 48 KB, and was then taken as 0 pages.
        (hostile(b"/Type/Pages", 48 * 1024), f"more than {NODES}"),
        (hostile(b"/Type/Pages", 8 * 1024), "no page object or page tree count found"),
        (hostile(b"/Type/Pages /Count 1 ", 8 * 1024), "no page object or page tree count found"),
        (hostile(b"%comment\n", 4096), "no page object or page tree count found"),
        (tree_only(0), "no page object or page tree count found"),
        (hostile(b"/Type ", MIB), "more than 100000 /Type keys"),
        (hostile(b"<< /Type /Pages /Count 2 >>", 2 * MIB), f"more than {NODES}"),
        (hostile(b"/Type /ObjStm stream\n", 2 * MIB), f"more than {NODES}"),
    ],
    ids=[
        "48KB",
        "pages-no-close",
        "counts-no-close",
        "no-pages",
        "count-zero",
        "types",
        "nodes",
        "streams",
    ],
)
def test_a_pdf_whose_pages_cannot_be_counted_is_refused_with_the_reason(data, reason):
    with pytest.raises(MessageError) as refused:
        accept("odd.pdf", data, AttachmentSettings())
    assert str(refused.value) == f"odd.pdf: cannot count its pages ({reason}); it is refused"


def test_an_object_stream_that_inflates_past_the_budget_is_refused():
    import zlib

    bomb = zlib.compress(b" " * (40 * MIB), 9)
    data = b"%PDF-1.5\n<< /Type /ObjStm /Filter /FlateDecode >>\nstream\n" + bomb + b"\n%%EOF\n"
    with pytest.raises(MessageError, match="inflate over 33554432 bytes"):
        accept("bomb.pdf", data, AttachmentSettings())


def test_a_hostile_32_mib_pdf_is_refused_while_another_channel_is_answered(
    home, fake, env, daemons
):
    """In a daemon process (a hang there fails this test by its deadline, not the suite)."""
    write_config(home)
    fake.add(text("hello from b"))
    daemon = daemons(home, env)
    drop_folder(
        home,
        "hostile",
        {
            "message.md": b"+++\nid = 'pdf'\nchannel = 'a'\n+++\nread this",
            "doc.pdf": hostile(b"/Type/Pages", 32 * MIB),
        },
    )
    drop(home, "hello", "plain", channel="b")
    (reply,) = wait_for(lambda: finals(home), 60, "b's reply")
    assert (reply["in_reply_to"], reply.text) == ("plain", "hello from b")
    error = home / "failed" / "hostile.error.txt"
    wait_for(error.exists, 60, "the hostile PDF refused")
    assert "doc.pdf: cannot count its pages (more than 100000 /Type keys)" in error.read_text()
    assert len(fake.requests) == 1
    daemon.close()
