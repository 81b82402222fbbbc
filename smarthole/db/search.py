"""Full-text search over everything said: the reads of the index ``searchindex`` keeps.

Ranked by FTS5's bm25, newest first on ties; each hit with its conversation, time, who said it
and a snippet whose matches are marked. FTS5's query syntax works (phrases, ``OR``, ``NEAR``,
prefix ``*``); a query it cannot parse is searched again as one plain phrase.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import StoreError, UsageError
from ..formats import CONTROL_CHARACTERS, from_micros, iso, micros
from .connection import Database
from .searchindex import MESSAGE_ROLE, MESSAGE_WHO

ROLES = ("human", "agent", "tool", "team")
MAX_QUERY_CHARS = 10_000
MAX_HITS = 1_000  # a larger limit gives this many
_OPEN, _CLOSE = "\ue000", "\ue001"  # private-use marks around a match in a snippet
_SNIPPET_TOKENS = 16


@dataclass(frozen=True)
class SearchHit:
    """One match: where (conversation, its title and channel), when, who, and a snippet as
    parts, each ``(text, matched)``."""

    conversation_id: str
    title: str | None
    channel: str
    at: datetime
    role: str | None
    who: str
    parts: tuple[tuple[str, bool], ...]
    rank: float

    @property
    def snippet(self) -> str:
        return "".join(text for text, _ in self.parts)

    def as_dict(self) -> dict[str, Any]:
        """The hit as ``search --json`` and the web view's API give it."""
        return {
            "conversation_id": self.conversation_id,
            "title": self.title,
            "channel": self.channel,
            "at": iso(self.at),
            "role": self.role,
            "who": self.who,
            "snippet": self.snippet,
            "matches": [text for text, matched in self.parts if matched],
            "rank": self.rank,
        }

    def marked(self, open_mark: str = "**", close_mark: str = "**") -> str:
        """The snippet on one line, each match between the marks."""
        text = "".join(f"{open_mark}{t}{close_mark}" if hit else t for t, hit in self.parts)
        return " ".join(text.split())


@dataclass(frozen=True)
class Filters:
    conversation_id: str | None = None
    channel: str | None = None
    since: datetime | None = None
    role: str | None = None
    exclude: str | None = None  # a conversation left out (the one asking)


class Search:
    """Searches one store's index."""

    def __init__(self, store: Database) -> None:
        self.store = store

    def search(
        self, query: str, *, filters: Filters = Filters(), limit: int = 20
    ) -> list[SearchHit]:
        """The best ``limit`` hits, best first (bm25), newest first on ties. FTS5's query
        syntax works; a query it cannot parse is searched as one plain phrase."""
        # Control characters separate words anyway; a NUL would end the query early.
        query = CONTROL_CHARACTERS.sub(" ", query).strip()
        if not query:
            raise UsageError("the search query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise UsageError(f"the search query is longer than {MAX_QUERY_CHARS:,} characters")
        if filters.role is not None and filters.role not in ROLES:
            raise UsageError(f"role must be one of {', '.join(ROLES)}, not {filters.role!r}")
        limit = max(1, min(limit, MAX_HITS))
        try:
            return self._search(query, filters, limit)
        except StoreError as exc:
            if not isinstance(exc.__cause__, sqlite3.OperationalError):
                raise
            return self._search(phrase(query), filters, limit)

    def _search(self, query: str, filters: Filters, limit: int) -> list[SearchHit]:
        clauses, params = _where(filters)
        sql = (
            "WITH hits AS MATERIALIZED (SELECT rowid AS doc, rank FROM search_index "
            "WHERE search_index MATCH :query) "
            f"SELECT h.doc, h.rank, c.id, c.title, c.channel, m.created_at AS at, "
            f"{MESSAGE_ROLE} AS role, {MESSAGE_WHO} AS who FROM hits h "
            "JOIN message_rows m ON m.id = h.doc JOIN conversations c ON c.key = m.conversation "
            f"WHERE h.doc > 0 {clauses} UNION ALL "
            "SELECT h.doc, h.rank, c.id, c.title, c.channel, d.created_at AS at, d.role, d.who "
            "FROM hits h JOIN search_docs d ON d.doc = h.doc "
            f"JOIN conversations c ON c.key = d.conversation WHERE h.doc < 0 {clauses} "
            "ORDER BY 2, 6 DESC LIMIT :limit"
        )
        rows = self.store.query(sql, {**params, "query": query, "limit": limit})
        snippets = self._snippets(query, [row[0] for row in rows])
        return [
            SearchHit(
                conversation_id=row[2],
                title=row[3],
                channel=row[4],
                at=from_micros(row[5]),
                role=row[6],
                who=row[7],
                parts=_parts(snippets.get(row[0], "")),
                rank=row[1],
            )
            for row in rows
        ]

    def _snippets(self, query: str, docs: list[int]) -> dict[int, str]:
        if not docs:
            return {}
        marks = ", ".join("?" * len(docs))
        rows = self.store.query(
            f"SELECT rowid, snippet(search_index, 0, ?, ?, '…', {_SNIPPET_TOKENS}) "
            f"FROM search_index WHERE search_index MATCH ? AND rowid IN ({marks})",
            (_OPEN, _CLOSE, query, *docs),
        )
        return {row[0]: row[1] or "" for row in rows}


def phrase(query: str) -> str:
    """``query`` as one FTS5 phrase: every character literal."""
    return '"' + query.replace('"', '""') + '"'


def _where(filters: Filters) -> tuple[str, dict[str, Any]]:
    clauses = []
    params: dict[str, Any] = {}
    if filters.conversation_id is not None:
        clauses.append("c.id = :conversation")
        params["conversation"] = filters.conversation_id
    if filters.exclude is not None:
        clauses.append("c.id != :exclude")
        params["exclude"] = filters.exclude
    if filters.channel is not None:
        clauses.append("c.channel = :channel")
        params["channel"] = filters.channel
    if filters.since is not None:
        clauses.append("at >= :since")
        params["since"] = micros(filters.since)
    if filters.role is not None:
        clauses.append("role = :role")
        params["role"] = filters.role
    return "".join(f" AND {c}" for c in clauses), params


_MARKS = re.compile(f"{_OPEN}(.*?){_CLOSE}", re.DOTALL)


def _parts(snippet: str) -> tuple[tuple[str, bool], ...]:
    parts: list[tuple[str, bool]] = []
    at = 0
    for match in _MARKS.finditer(snippet):
        if match.start() > at:
            parts.append((snippet[at : match.start()], False))
        parts.append((match.group(1), True))
        at = match.end()
    if at < len(snippet):
        parts.append((snippet[at:], False))
    cleaned = [(t.replace(_OPEN, "").replace(_CLOSE, ""), hit) for t, hit in parts]
    return tuple((t, hit) for t, hit in cleaned if t)
