"""Markdown of untrusted text into safe HTML: the only module that imports ``markdown_it``.

Everything the model, a tool, a file or a peer wrote may be an attack (prompt injection), so:
raw HTML is off (a ``<script>`` shows as text), images are off (no request leaves the page),
links may only be ``http``, ``https`` or ``mailto`` and get ``rel="noopener noreferrer"``, and
text too long to parse cheaply is shown as plain escaped text.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup, escape

SCHEMES = ("http:", "https:", "mailto:")
MAX_CHARS = 100_000  # longer texts are shown as plain text: parsing stays bounded
MAX_NESTING = 20


def render(text: str) -> Markup:
    """``text`` as HTML that is safe to put in a page."""
    if len(text) > MAX_CHARS:
        return Markup('<pre class="plain">') + escape(text) + Markup("</pre>")
    return Markup(_parser().render(text))


@functools.cache
def _parser() -> MarkdownIt:
    md = MarkdownIt(
        "commonmark",
        {"html": False, "breaks": True, "linkify": False, "maxNesting": MAX_NESTING},
    )
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = _allowed  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


def _allowed(url: str) -> bool:
    return url.strip().lower().startswith(SCHEMES)


def _link_open(self: Any, tokens: Sequence[Token], index: int, options: Any, env: Any) -> str:
    tokens[index].attrSet("rel", "noopener noreferrer")
    return str(self.renderToken(tokens, index, options, env))
