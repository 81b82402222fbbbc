"""The API history of recent conversations, kept between model calls and turns.

A conversation's stored rows become API messages once (``agent.messages`` makes them valid),
and a turn sent before is kept as the JSON text it was sent as: a model call's history costs
what is new, not the conversation's length.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..db.records import KINDS, USER
from .messages import Encoder, History, to_api_messages, tool_use_ids

if TYPE_CHECKING:
    from ..db.messages import HistoryRow


class HistoryRows(Protocol):
    """Where a :class:`HistoryCache` reads rows from (the store)."""

    def history_rows(self, conversation_id: str, *, after_id: int) -> list[HistoryRow]: ...

    def history_tail(
        self, conversation_id: str, *, current_turn: int, budget_chars: int
    ) -> tuple[list[HistoryRow], bool]: ...


@dataclass(frozen=True)
class Window:
    """The history one model call sends, and the stored sizes the budget counted."""

    history: History
    earlier_chars: int
    current_chars: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.history.messages()


class _Message(NamedTuple):
    kind: str
    content: list[dict[str, Any]]  # API blocks; shared between calls, so never changed
    plain: bool = False  # known to be text blocks only, none of them blank


# A _Message as a plain tuple: a reload makes thousands, and a named tuple costs ten times more.
_Row = tuple[str, list[dict[str, Any]], bool]


class _Turn:
    __slots__ = ("_api", "closed", "count", "json", "messages", "size")

    def __init__(self) -> None:
        self.size = 0  # stored characters: what the history budget counts
        self.count = 0  # stored messages
        self.messages: list[_Row] | None = []  # None once packed: only its JSON is kept
        self._api: list[dict[str, Any]] | None = None  # made when first wanted; a row clears it
        self.closed = False  # whether _api is _closed
        self.json: str | None = None  # its API messages' JSON text, once sent as an earlier turn

    @property
    def packed(self) -> bool:
        return self.messages is None

    def api_changed(self) -> None:
        """Rows are being added: the API messages are made again when next wanted."""
        self._api = None
        self.json = None

    def api(self) -> list[dict[str, Any]]:
        if self._api is None:
            if self.messages is None:  # packed: decoded (only off the usual path)
                assert self.json is not None
                return list(json.loads(f"[{self.json}]"))
            self._api = _question_and_answer(self.messages)
            if self._api is not None:
                self.closed = True
            else:
                self._api = to_api_messages([_Message(*m) for m in self.messages])
                self.closed = _closed(self._api)
        return self._api

    def rows(self) -> list[_Row]:
        """Its rows; a packed turn's API messages stand in for them (the same conversion)."""
        if self.messages is not None:
            return self.messages
        return [(m["role"], m["content"], False) for m in self.api()]

    def encoded(self, encode: Encoder) -> str:
        """Its API messages as JSON text, without the array's brackets; made once."""
        if self.json is None:
            self.json = encode(self.api())[1:-1]
        return self.json

    def pack(self) -> int:
        """Keep only the JSON text (once made) of a finished turn; returns the bytes freed."""
        if self.json is None or self.messages is None:
            return 0
        freed = self.count * MESSAGE_BYTES + self.size - (len(self.json) + TURN_BYTES)
        self.messages = None
        self._api = None
        return freed


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
        and not tool_use_ids(api[-1])
    )


@dataclass
class _Kept:
    last_id: int
    turns: dict[int, _Turn]  # by number, ascending
    older: bool  # turns before the first kept one exist in the store
    weight: int = 0  # about the bytes held: text and objects (MESSAGE_BYTES), or JSON text
    stale: bool = False  # a row came for a packed turn: read the history again


KEEP_BYTES = 4 * 2**20
"""About the memory the history of all kept conversations may hold together."""

MESSAGE_BYTES = 1024
"""The objects one kept message costs beyond its text: its row, its parsed blocks and its API
message (measured: a turn of two short messages holds about 2 KiB)."""

TURN_BYTES = 200
"""What a packed turn costs beyond its JSON text: the turn object and the string's header."""


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
            if kept is not None:
                self._add(kept, self._rows.history_rows(conversation_id, after_id=kept.last_id))
            if kept is None or kept.stale:
                kept = self._load(conversation_id, current_turn, budget_chars)
            chosen = self._choose(kept, current_turn, budget_chars)
            if chosen is None:  # wants turns forgotten or never read
                kept = self._load(conversation_id, current_turn, budget_chars)
                chosen = self._choose(kept, current_turn, budget_chars) or []
            turns = [kept.turns[n] for n in chosen]
            # Sent before, as an earlier turn: its text is enough. (A walk over every turn of
            # every call: the test for packed turns is inline.)
            kept.weight -= sum(turn.pack() for turn in turns[:-1] if turn.messages is not None)
            self._kept[conversation_id] = kept
            while len(self._kept) > 1 and (
                len(self._kept) > self._limit
                or sum(k.weight for k in self._kept.values()) > self._max_bytes
            ):
                self._kept.popitem(last=False)
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
                if turn.messages is None:  # a late row of a packed turn (not seen in practice):
                    kept.stale = True  # read again; a call may still be sending its text
                    return
                turn.api_changed()
            assert turn.messages is not None
            turn.messages.append((KINDS[code], content, plain))
            turn.count += 1
            chars = len(body)
            turn.size += chars
            size += chars
        kept.weight += size + len(rows) * MESSAGE_BYTES
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
                    kept.weight -= _weight(kept.turns.pop(old))
                kept.older = kept.older or bool(gone)
                break
            spent += size
            chosen.append(number)
        else:
            if kept.older:
                return None
        chosen.reverse()
        return chosen


def _weight(turn: _Turn) -> int:
    if turn.packed:
        assert turn.json is not None
        return len(turn.json) + TURN_BYTES
    return turn.size + turn.count * MESSAGE_BYTES


def _is_closed(turn: _Turn) -> bool:
    if not turn.packed:
        turn.api()  # finds out
    return turn.closed


def _joined(turns: list[_Turn]) -> History:
    """The API messages of ``turns``: each turn's own, kept between calls, joined where every
    earlier turn is closed (the usual case); converted together where one is not."""
    if not turns:
        return History([], [])
    *earlier, last = turns
    api = last.api()
    closed = all(turn.messages is None or _is_closed(turn) for turn in earlier)
    if closed and (not api or api[0]["role"] == "user"):
        return History(earlier, list(api))
    rows = [_Message(*row) for turn in turns for row in turn.rows()]
    return History([], to_api_messages(rows))
