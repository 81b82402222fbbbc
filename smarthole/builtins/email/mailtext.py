"""A mail's words as a person wrote them: HTML made text, earlier quoted replies and the
signature cut. Plain functions over untrusted text; nothing here raises on odd input."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

BLOCKS = {
    "address", "article", "blockquote", "br", "dd", "div", "dl", "dt", "footer", "h1", "h2",
    "h3", "h4", "h5", "h6", "header", "hr", "li", "ol", "p", "pre", "section", "table", "td",
    "th", "tr", "ul",
}  # fmt: skip
HIDDEN = {"head", "script", "style", "template", "title"}
# Where an earlier message begins: the quote header of most clients, Outlook's rule and
# its "From:/Sent:" block, a forwarded message's banner.
QUOTE_HEADERS = [
    re.compile(r"^\s*On\b.{0,300}\bwrote:\s*\Z", re.IGNORECASE | re.DOTALL),
    re.compile(r"^\s*Le\b.{0,300}\ba écrit\s*:\s*\Z", re.IGNORECASE | re.DOTALL),
    re.compile(r"^\s*Am\b.{0,300}\bschrieb\b.{0,100}:\s*\Z", re.IGNORECASE | re.DOTALL),
    re.compile(r"^\s*-{2,}\s*Original Message\s*-{2,}\s*\Z", re.IGNORECASE),
    re.compile(r"^\s*_{10,}\s*\Z"),
]
OUTLOOK_FROM = re.compile(r"^\s*From:\s.+\Z", re.IGNORECASE)  # with Sent: or Date: below
OUTLOOK_NEXT = re.compile(r"^\s*(Sent|Date):\s", re.IGNORECASE)
SIGNATURE = re.compile(r"^-- ?\Z")  # RFC 3676's separator ("-- "), as clients write it
MOBILE_SIGNATURE = re.compile(r"^\s*Sent from my \w[\w ]{0,40}\Z", re.IGNORECASE)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in HIDDEN:
            self.hidden += 1
        elif tag in BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "blockquote":
            self.parts.append("\0quote\0")

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(re.sub(r"[ \t\r\n]+", " ", data))


def html_to_text(markup: str) -> str:
    """The readable text of an HTML body: blocks on lines of their own, no markup.

    A ``<blockquote>`` (how HTML clients quote the earlier mail) ends the text.
    """
    parser = _Text()
    try:
        parser.feed(markup)
        parser.close()
    except Exception:  # html.parser is lenient; a surprise must not cost the mail
        return html.unescape(re.sub(r"<[^>]*>", " ", markup))
    text = "".join(parser.parts).split("\0quote\0")[0]
    lines = [line.strip() for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def cut_quotes_and_signature(text: str) -> str:
    """The new part of a reply: up to the quoted earlier mail or the signature."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    for index, line in enumerate(lines):
        if SIGNATURE.match(line) or MOBILE_SIGNATURE.match(line):
            break
        if line.lstrip().startswith(">"):
            continue  # a quoted line, wherever it is
        joined = " ".join(lines[index : index + 2])  # "On ... <a@b>\nwrote:" wraps
        if any(p.match(line) for p in QUOTE_HEADERS) or QUOTE_HEADERS[0].match(joined):
            break
        below = lines[index + 1 : index + 4]
        if OUTLOOK_FROM.match(line) and any(OUTLOOK_NEXT.match(n) for n in below):
            break
        kept.append(line.rstrip())
    return "\n".join(kept).strip()
