"""The API history of recent conversations, kept between model calls and turns.

A conversation's stored rows become API messages once (``agent.messages`` makes them valid),
and turns sent before are kept as the JSON text they were sent as, back to back in one string:
a model call's history costs what is new, not the conversation's length, and a long
conversation holds its text and a few bytes a turn.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..attachments.kinds import budget_chars
from ..db.records import KINDS, USER
from .blocks import AttachmentBlocks, has_attachments
from .messages import Encoder, History, to_api_messages, tool_use_ids
from .packed import Packed, PackedText, Row
from .prompts import with_note

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
_Row = Row


class _Turn:
    __slots__ = ("_api", "closed", "count", "extra", "json", "messages", "size")

    def __init__(self) -> None:
        self.size = 0  # stored characters: what the history budget counts
        self.extra = 0  # bytes of attachments its blocks hold (memory, not budget)
        self.count = 0  # stored messages
        self.messages: list[_Row] = []
        self._api: list[dict[str, Any]] | None = None  # made when first wanted; a row clears it
        self.closed = False  # whether _api is _closed
        self.json: str | None = None  # its API messages' JSON text, once sent as an earlier turn

    def api_changed(self) -> None:
        """Rows are being added: the API messages are made again when next wanted."""
        self._api = None
        self.json = None

    def api(self) -> list[dict[str, Any]]:
        if self._api is None:
            self._api = _question_and_answer(self.messages)
            if self._api is not None:
                self.closed = True
            else:
                self._api = to_api_messages([_Message(*m) for m in self.messages])
                self.closed = _closed(self._api)
        return self._api

    def rows(self) -> list[_Row]:
        return self.messages

    def encoded(self, encode: Encoder) -> str:
        """Its API messages as JSON text, without the array's brackets; made once."""
        if self.json is None:
            self.json = encode(self.api())[1:-1]
        return self.json

    def weight(self) -> int:
        return self.size + self.extra + self.count * MESSAGE_BYTES


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
    turns: dict[int, _Turn]  # those not packed, by number, ascending
    older: bool  # turns before the first kept one exist in the store
    older_size: int = 0  # the stored characters of the newest of them (0: not known)
    loose: int = 0  # about the bytes the turns not packed hold: text and objects (MESSAGE_BYTES)
    stale: bool = False  # a row came for a packed turn: read the history again
    packed: Packed = field(default_factory=Packed)  # all older than ``turns``
    cutoff: int = 0  # turns before this one have their attachments as a one-line note
    full: set[int] = field(default_factory=set)  # turns whose attachments are sent whole
    note: tuple[int, str] | None = None  # a fork's note, and the turn whose context holds it

    @property
    def weight(self) -> int:
        return self.loose + self.packed.weight()


class _Choice(NamedTuple):
    """The turns a call sends: all the packed ones (older turns are dropped), then
    ``numbers``."""

    numbers: list[int]
    chars: int  # their stored characters


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
        attachments: AttachmentBlocks | None = None,
        history_turns: int = 0,
        notes: Callable[[str], tuple[int, str] | None] | None = None,
    ) -> None:
        self._rows = rows
        self._notes = notes  # a fork's note for one turn's context (``db.forking.fork_note``)
        self._attachments = attachments
        self.history_turns = history_turns  # 0: every turn's attachments are sent again
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
            cutoff = current_turn - self.history_turns + 1 if self.history_turns else 0
            if kept is not None and any(number < cutoff for number in kept.full):
                kept = None  # an attachment is now too old to send: read the turns again
            if kept is not None:
                self._add(kept, self._rows.history_rows(conversation_id, after_id=kept.last_id))
            if kept is None or kept.stale:
                kept = self._load(conversation_id, current_turn, budget_chars, cutoff)
            chosen = self._choose(kept, current_turn, budget_chars)
            if chosen is None:  # wants turns forgotten or never read
                kept = self._load(conversation_id, current_turn, budget_chars, cutoff)
                chosen = self._choose(kept, current_turn, budget_chars) or _Choice([], 0)
            _pack(kept, chosen.numbers[:-1])
            prefix = PackedText(kept.packed.text) if kept.packed else None
            turns = [kept.turns[n] for n in chosen.numbers if n in kept.turns]
            self._kept[conversation_id] = kept
            while len(self._kept) > 1 and (
                len(self._kept) > self._limit
                or sum(k.weight for k in self._kept.values()) > self._max_bytes
            ):
                self._kept.popitem(last=False)
            current = kept.turns.get(current_turn, _Turn())
            return Window(_joined(prefix, turns), chosen.chars - current.size, current.size)

    def clear(self) -> int:
        """Forget every conversation (each is read again when next asked for); how many."""
        with self._lock:
            count, self._kept = len(self._kept), OrderedDict()
        return count

    def _load(
        self, conversation_id: str, current_turn: int, budget_chars: int, cutoff: int
    ) -> _Kept:
        rows, older = self._rows.history_tail(
            conversation_id, current_turn=current_turn, budget_chars=budget_chars
        )
        note = self._notes(conversation_id) if self._notes is not None else None
        kept = _Kept(last_id=0, turns={}, older=older, cutoff=cutoff, note=note)
        self._add(kept, rows)
        return kept

    def _add(self, kept: _Kept, rows: list[HistoryRow]) -> None:
        turns, context = kept.turns, self._context
        if kept.note is not None:
            context = _noted(context, *kept.note)
        # A content stored as JSON is parsed with the others, in one call: thousands of
        # json.loads calls cost twice as much. Most are one text block, stored as its text.
        parsed = iter(json.loads(f"[{','.join(row[3] for row in rows if row[4])}]"))
        size = 0
        turn: _Turn  # set by the first row: number starts unmatched
        number = None
        for _, row_turn, code, body, is_json, created_at in rows:  # a reload: thousands
            plain = not is_json and body != "" and not body.isspace()
            held = 0
            if is_json:
                content = next(parsed)
                if code == USER:
                    if self._attachments is not None and has_attachments(content):
                        full = row_turn >= kept.cutoff
                        content, held = self._attachments.resolve(content, created_at, full=full)
                        if full:  # an image holds a marker, not its bytes: held may be 0
                            kept.full.add(row_turn)
                    content.insert(0, context(row_turn, created_at))
            elif code == USER:
                content = [context(row_turn, created_at), {"type": "text", "text": body}]
            else:
                content = [{"type": "text", "text": body}]
            if row_turn != number:  # a turn's rows come together
                number = row_turn
                if number <= kept.packed.last():  # a late row of a packed turn (not seen in
                    kept.stale = True  # practice): read again; a call may be sending its text
                    return
                turn = turns.get(number) or turns.setdefault(number, _Turn())
                turn.api_changed()
            turn.messages.append((KINDS[code], content, plain))
            turn.count += 1
            chars = budget_chars(body) if is_json else len(body)
            turn.size += chars
            turn.extra += held  # memory, not budget: an image is not its base64 in tokens
            size += chars + held
        kept.loose += size + len(rows) * MESSAGE_BYTES
        if rows:
            kept.last_id = max(kept.last_id, max(row[0] for row in rows))

    def _choose(self, kept: _Kept, current_turn: int, budget_chars: int) -> _Choice | None:
        """The turns to send: the newest that fit in the budget, oldest first; None if the
        budget wants turns not kept (or the packed ones are not all earlier)."""
        packed = kept.packed
        if packed.last() >= current_turn:
            return None
        numbers: list[int] = []
        spent = 0
        for number in sorted(kept.turns, reverse=True):
            if number > current_turn:
                continue
            size = kept.turns[number].size
            if number != current_turn and spent + size > budget_chars:
                gone = [n for n in kept.turns if n <= number]  # out of the budget for good
                for old in gone:
                    kept.loose -= kept.turns.pop(old).weight()
                kept.older, kept.older_size = True, size
                packed.drop(len(packed))
                numbers.reverse()
                return _Choice(numbers, spent)
            spent += size
            numbers.append(number)
        numbers.reverse()
        start = len(packed)
        if spent + packed.chars <= budget_chars:  # the usual case: all of them fit
            start, spent = 0, spent + packed.chars
        while start and spent + packed.sizes[start - 1] <= budget_chars:
            start -= 1
            spent += packed.sizes[start]
        if start:  # the older ones are out of the budget for good
            kept.older, kept.older_size = True, packed.sizes[start - 1]
            packed.drop(start)
        elif kept.older and spent + kept.older_size <= budget_chars:
            return None  # the newest turn not kept would fit: read again
        return _Choice(numbers, spent)


def _noted(
    context: Callable[[int, int], dict[str, Any]], turn: int, note: str
) -> Callable[[int, int], dict[str, Any]]:
    """``context``, with ``note`` in the context block of turn ``turn`` (a fork's first)."""

    def noted(row_turn: int, created_at: int) -> dict[str, Any]:
        block = context(row_turn, created_at)
        if row_turn != turn:
            return block
        return {**block, "text": with_note(block["text"], note)}

    return noted


def _pack(kept: _Kept, earlier: list[int]) -> None:
    """Pack the oldest of the ``earlier`` turns a call sends that were sent before (so have
    their text), and are closed: from now on their text is enough."""
    sent = []
    for number in earlier:
        turn = kept.turns[number]
        if turn.json is None or not turn.closed:
            break
        sent.append((number, kept.turns.pop(number)))
        kept.loose -= turn.weight()
    if sent:
        kept.packed.add(sent)


def _is_closed(turn: _Turn) -> bool:
    turn.api()  # finds out
    return turn.closed


def _joined(prefix: PackedText | None, turns: list[_Turn]) -> History:
    """The API messages of the packed turns (``prefix``) and ``turns``: each turn's own, kept
    between calls, joined where every earlier turn is closed (the usual case); converted
    together where one is not."""
    packed: list[PackedText | _Turn] = [prefix] if prefix is not None else []
    if not turns:
        return History(packed, [])
    *earlier, last = turns
    api = last.api()
    closed = all(_is_closed(turn) for turn in earlier)
    if closed and (not api or api[0]["role"] == "user"):
        return History([*packed, *earlier], list(api))
    rows = [_Message(*row) for turn in packed + turns for row in turn.rows()]
    return History([], to_api_messages(rows))
