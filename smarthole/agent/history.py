"""Stored messages into valid Messages API history.

The store keeps what happened, including turns that failed half-way. The API accepts only
alternating roles starting with ``user``, non-empty text blocks, and every ``tool_use``
answered by a ``tool_result`` in the next message. This module bridges the two, so a failed
or abandoned turn never poisons the conversation that follows it.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..db.records import KINDS, USER
from .prompts import EPHEMERAL

if TYPE_CHECKING:
    from ..db.messages import HistoryRow

NOT_RUN = "Error: this tool call was never run; the turn ended before it could run."


class Stored(Protocol):
    """A stored message as the history needs it (``StoredMessage`` is one)."""

    @property
    def kind(self) -> str: ...

    @property
    def content(self) -> list[dict[str, Any]]: ...


def to_api_messages(stored: Sequence[Stored]) -> list[dict[str, Any]]:
    """Build alternating-role API messages from stored user/assistant/tool_result rows."""
    messages: list[dict[str, Any]] = []
    for row in stored:
        if row.kind not in ("user", "assistant", "tool_result"):
            continue
        blocks = [b for b in row.content if not _empty_text(b)]
        if not blocks:
            continue
        role = "assistant" if row.kind == "assistant" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    while messages and messages[0]["role"] != "user":
        messages.pop(0)
    return _answer_every_tool_use(messages)


def with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with a prompt cache breakpoint on the last block of the last message.

    The next call of a tool loop, and the next turn, send this request again plus what is
    new, so they read it from the cache. The marked message and block are copies: the ones
    given may be shared with later calls.
    """
    if not messages or not messages[-1]["content"]:
        return messages
    last = messages[-1]
    marked = {**last["content"][-1], "cache_control": EPHEMERAL}
    return [*messages[:-1], {**last, "content": [*last["content"][:-1], marked]}]


def _empty_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text", "")).strip()


def _answer_every_tool_use(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give each tool_use its tool_result right after it; drop results that answer nothing."""
    repaired: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message["role"] == "user":
            previous = repaired[-1] if repaired else None
            expected = _tool_use_ids(previous) if previous else []
            results = {
                b["tool_use_id"]: b for b in message["content"] if b.get("type") == "tool_result"
            }
            others = [b for b in message["content"] if b.get("type") != "tool_result"]
            ordered = [results.get(i) or _not_run(i) for i in expected]
            if ordered or others:
                repaired.append({"role": "user", "content": ordered + others})
            continue
        repaired.append(message)
        following = messages[index + 1] if index + 1 < len(messages) else None
        if _tool_use_ids(message) and following is None:
            # The turn ended on a tool call with no results at all (a stop before any ran).
            repaired.append(
                {"role": "user", "content": [_not_run(i) for i in _tool_use_ids(message)]}
            )
    return repaired


def _tool_use_ids(message: dict[str, Any] | None) -> list[str]:
    if message is None or message["role"] != "assistant":
        return []
    return [b["id"] for b in message["content"] if b.get("type") == "tool_use"]


def _not_run(tool_use_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": NOT_RUN, "is_error": True}


class HistoryRows(Protocol):
    """Where a :class:`HistoryCache` reads rows from (the store)."""

    def history_rows(self, conversation_id: str, *, after_id: int) -> list[HistoryRow]: ...

    def history_tail(
        self, conversation_id: str, *, current_turn: int, budget_chars: int
    ) -> tuple[list[HistoryRow], bool]: ...


@dataclass(frozen=True)
class Window:
    """The history one model call sends, and the stored sizes the budget counted."""

    messages: list[dict[str, Any]]
    earlier_chars: int
    current_chars: int


class _Message(NamedTuple):
    kind: str
    content: list[dict[str, Any]]  # API blocks; shared between calls, so never changed
    plain: bool = False  # known to be text blocks only, none of them blank


# A _Message as a plain tuple: a reload makes thousands, and a named tuple costs ten times more.
_Row = tuple[str, list[dict[str, Any]], bool]


class _Turn:
    __slots__ = ("_api", "closed", "messages", "size")

    def __init__(self) -> None:
        self.size = 0  # stored characters: what the history budget counts
        self.messages: list[_Row] = []
        self._api: list[dict[str, Any]] | None = None  # made when first wanted; a row clears it
        self.closed = False  # whether _api is _closed

    def api_changed(self) -> None:
        """Rows are being added: the API messages are made again when next wanted."""
        self._api = None

    def api(self) -> list[dict[str, Any]]:
        if self._api is None:
            self._api = _question_and_answer(self.messages)
            if self._api is not None:
                self.closed = True
            else:
                self._api = to_api_messages([_Message(*m) for m in self.messages])
                self.closed = _closed(self._api)
        return self._api


def _question_and_answer(messages: list[_Row]) -> list[dict[str, Any]] | None:
    """The API messages of the commonest turn, a user message and a text reply, made without
    the general conversion's walk; None for any other shape."""
    if len(messages) != 2:
        return None
    (kind, question, plain), (reply_kind, answer, reply_plain) = messages
    if kind != "user" or reply_kind != "assistant":
        return None
    if not (plain and reply_plain):
        for block in (*question, *answer):
            if block.get("type") != "text" or not block.get("text", "").strip():
                return None
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


def _closed(api: list[dict[str, Any]]) -> bool:
    """Whether a turn's API messages start with the user and end with a reply that calls no
    tool: then the turns' messages joined are what converting them together would make."""
    return (
        bool(api)
        and api[0]["role"] == "user"
        and api[-1]["role"] == "assistant"
        and not _tool_use_ids(api[-1])
    )


@dataclass
class _Kept:
    last_id: int
    turns: dict[int, _Turn]  # by number, ascending
    older: bool  # turns before the first kept one exist in the store
    size: int = 0  # stored characters of the kept turns
    count: int = 0  # stored messages of the kept turns

    @property
    def weight(self) -> int:
        """About the bytes this history holds: its text, plus the objects around each message."""
        return self.size + self.count * MESSAGE_BYTES


KEEP_BYTES = 4 * 2**20
"""About the memory the history of all kept conversations may hold together."""

MESSAGE_BYTES = 1024
"""The objects one kept message costs beyond its text: its row, its parsed blocks and its API
message (measured: a turn of two short messages holds about 2 KiB)."""


class HistoryCache:
    """The API history of recent conversations, kept between model calls and turns.

    A conversation's messages are only ever appended (it is deleted whole), so its history is
    read and parsed once, and after that only its new rows: the cost of a model call's history
    follows what is new, not the conversation's length. Turns that fell out of the budget are
    forgotten; a later call that wants them (a larger budget after a reload) reads again. The
    least recently used conversations go when more than ``conversations`` are kept, or when
    what is kept would hold more than about ``max_bytes``: memory follows that bound, not the
    number or the length of the conversations (a miss costs one read of the budget's rows).
    """

    def __init__(
        self,
        rows: HistoryRows,
        context: Callable[[int, int], dict[str, Any]],
        *,
        conversations: int = 64,
        max_bytes: int = KEEP_BYTES,
    ) -> None:
        self._rows = rows
        self._context = context  # a user message's first block, from its turn and time (micros)
        self._limit = conversations
        self._max_bytes = max_bytes
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def window(self, conversation_id: str, *, current_turn: int, budget_chars: int) -> Window:
        """The current turn's messages plus whole earlier turns, newest first while they fit
        in ``budget_chars``, as alternating-role API messages."""
        with self._lock:
            kept = self._kept.pop(conversation_id, None)
            if kept is None:
                kept = self._load(conversation_id, current_turn, budget_chars)
            else:
                self._add(kept, self._rows.history_rows(conversation_id, after_id=kept.last_id))
            chosen = self._choose(kept, current_turn, budget_chars)
            if chosen is None:  # wants turns forgotten or never read
                kept = self._load(conversation_id, current_turn, budget_chars)
                chosen = self._choose(kept, current_turn, budget_chars) or []
            self._kept[conversation_id] = kept
            while len(self._kept) > 1 and (
                len(self._kept) > self._limit
                or sum(k.weight for k in self._kept.values()) > self._max_bytes
            ):
                self._kept.popitem(last=False)
            turns = [kept.turns[n] for n in chosen]
            current = kept.turns.get(current_turn, _Turn())
            earlier = sum(turn.size for turn in turns) - current.size
            return Window(_joined(turns), earlier, current.size)

    def _load(self, conversation_id: str, current_turn: int, budget_chars: int) -> _Kept:
        rows, older = self._rows.history_tail(
            conversation_id, current_turn=current_turn, budget_chars=budget_chars
        )
        kept = _Kept(last_id=0, turns={}, older=older)
        self._add(kept, rows)
        return kept

    def _add(self, kept: _Kept, rows: list[HistoryRow]) -> None:
        turns, context = kept.turns, self._context
        # A content stored as JSON is parsed with the others, in one call: thousands of
        # json.loads calls cost twice as much. Most are one text block, stored as its text.
        parsed = iter(json.loads(f"[{','.join(row[3] for row in rows if row[4])}]"))
        size = 0
        turn: _Turn  # set by the first row: number starts unmatched
        number = None
        for _, row_turn, code, body, is_json, created_at in rows:  # a reload: thousands
            plain = not is_json and body != "" and not body.isspace()
            if is_json:
                content = next(parsed)
                if code == USER:
                    content.insert(0, context(row_turn, created_at))
            elif code == USER:
                content = [context(row_turn, created_at), {"type": "text", "text": body}]
            else:
                content = [{"type": "text", "text": body}]
            if row_turn != number:  # a turn's rows come together
                number = row_turn
                turn = turns.get(number) or turns.setdefault(number, _Turn())
                turn.api_changed()
            turn.messages.append((KINDS[code], content, plain))
            chars = len(body)
            turn.size += chars
            size += chars
        kept.size += size
        kept.count += len(rows)
        if rows:
            kept.last_id = max(kept.last_id, max(row[0] for row in rows))

    def _choose(self, kept: _Kept, current_turn: int, budget_chars: int) -> list[int] | None:
        """Turn numbers to send, oldest first; None if the budget wants turns not kept."""
        chosen: list[int] = []
        spent = 0
        for number in sorted(kept.turns, reverse=True):
            if number > current_turn:
                continue
            size = kept.turns[number].size
            if number != current_turn and spent + size > budget_chars:
                gone = [n for n in kept.turns if n < number]  # out of the budget for good
                for old in gone:
                    dropped = kept.turns.pop(old)
                    kept.size -= dropped.size
                    kept.count -= len(dropped.messages)
                kept.older = kept.older or bool(gone)
                break
            spent += size
            chosen.append(number)
        else:
            if kept.older:
                return None
        chosen.reverse()
        return chosen


def _joined(turns: list[_Turn]) -> list[dict[str, Any]]:
    """The API messages of ``turns``: each turn's own, kept between calls, joined where every
    earlier turn is closed (the usual case); converted together where one is not."""
    if not turns:
        return []
    *earlier, last = [turn.api() for turn in turns]
    if all(turn.closed for turn in turns[:-1]) and (not last or last[0]["role"] == "user"):
        return [message for api in (*earlier, last) for message in api]
    return to_api_messages([_Message(*message) for turn in turns for message in turn.messages])
