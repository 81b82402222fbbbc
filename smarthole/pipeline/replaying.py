"""Replays: a conversation's human messages run again, against another model or system prompt,
into a new conversation, the original's recorded tool results standing in for its tools.

:func:`start_replay` makes the replay: a fork of the original before ``from_turn`` (its
``replay_plan`` recorded, titled "replay of …", ended so it is no channel's current
conversation) and one ledger message per human message to replay, on the :data:`REPLAY`
channel, in order. From there each is a turn like any other: the daemon runs it (crash-safe,
through approvals and budgets), with three differences the processor asks :class:`Replays`
about: the plan's model and system prompt; tool calls answered by ``agent.standin``; and no
reply delivered (no outbox file, no ``deliver`` hook: not to the desktop, not by mail).

The same replay asked for again while unfinished (a ``kill -9`` cut it short) is found by its
key and resumed, not started twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.prompts import UNTITLED
from ..agent.standin import RecordedCalls, ReplayTools
from ..attachments import attachments_in
from ..db.forking import ForkSpec
from ..db.records import Message
from ..db.states import MessageStatus
from ..errors import UsageError
from ..formats import content_hash
from .turn import derived_id

if TYPE_CHECKING:
    from ..conversations import Conversations
    from ..db.forking import Fork
    from ..db.ledger import Ledger, LedgerEntry
    from ..db.records import Conversation
    from ..db.store import Store

logger = logging.getLogger(__name__)

REPLAY = "replay"
"""The metadata key naming a replay message's replay, and the channel replays run on."""
REPLAY_TURN = "replay_turn"  # the metadata key of the original turn a message replays
OVER = (MessageStatus.DONE, MessageStatus.DEAD)


def is_replay(message: Message) -> bool:
    """Whether ``message`` is a turn of a replay (its reply is never delivered)."""
    return isinstance(message.metadata.get(REPLAY), str)


@dataclass(frozen=True)
class ReplayPlan:
    """How a replay runs: its conversation, and the model, prompt and tools it uses."""

    conversation: Conversation
    original: str
    model: str | None
    system_prompt: str | None
    live_tools: bool
    from_turn: int
    turns: tuple[int, ...]  # the original's turns it replays, in order

    @classmethod
    def of(cls, conversation: Conversation, fork: Fork) -> ReplayPlan:
        plan = fork.replay_plan or {}
        return cls(
            conversation=conversation,
            original=fork.forked_from,
            model=plan.get("model"),
            system_prompt=plan.get("system_prompt"),
            live_tools=bool(plan.get("live_tools")),
            from_turn=int(plan.get("from_turn", 1)),
            turns=tuple(plan.get("turns", ())),
        )

    def system(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The system blocks with the plan's prompt instead of the agent's persona and
        guidelines (the first block); the rest (this conversation, recent ones) kept."""
        if self.system_prompt is None or not blocks:
            return blocks
        return [{**blocks[0], "text": self.system_prompt}, *blocks[1:]]


class Replays:
    """What the processor asks about a ledger message that may be a replay's."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def plan(self, entry: LedgerEntry) -> ReplayPlan | None:
        """The plan of the replay ``entry`` is a turn of; None for any other message."""
        replay = entry.message.metadata.get(REPLAY)
        if not isinstance(replay, str) or entry.channel != REPLAY:
            return None
        fork = self.store.fork_of(replay)
        conversation = self.store.conversation(replay)
        if fork is None or fork.replay_plan is None or conversation is None:
            return None
        return ReplayPlan.of(conversation, fork)

    def tools(self, plan: ReplayPlan, entry: LedgerEntry) -> ReplayTools:
        """How the turn of ``entry`` answers its tool calls: from the original's same turn."""
        turn = int(entry.message.metadata.get(REPLAY_TURN, 0))
        recorded = RecordedCalls.of_turn(self.store.messages(plan.original, turn=turn))
        return ReplayTools(recorded, live_tools=plan.live_tools, model=plan.model)


def replay_key(original: str, plan: dict[str, Any]) -> str:
    """What tells one replay from another of the same conversation: all it was asked."""
    asked = {k: plan[k] for k in ("model", "system_prompt", "from_turn", "live_tools")}
    text = json.dumps({"original": original, **asked}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def message_id(replay: str, turn: int) -> str:
    """The ledger id of the message that replays the original's ``turn``."""
    return derived_id("replay", replay, str(turn))


def unfinished(ledger: Ledger, fork: Fork) -> bool:
    """Whether some message of replay ``fork`` has not been answered (or given up) yet."""
    for turn in (fork.replay_plan or {}).get("turns", ()):
        entry = ledger.get(message_id(fork.conversation_id, turn))
        if entry is None or entry.status not in OVER:
            return True
    return False


def start_replay(
    store: Store,
    ledger: Ledger,
    conversations: Conversations,
    wanted: str,
    *,
    model: str | None = None,
    system_prompt: str | None = None,
    from_turn: int = 1,
    live_tools: bool = False,
) -> tuple[Fork, bool]:
    """The replay of conversation ``wanted`` (id or unique prefix), and whether it is one
    asked for before and not finished (resumed). ``UsageError`` for a turn it lacks."""
    original = conversations.get(wanted)
    if from_turn < 1 or from_turn > original.turns:
        raise UsageError(
            f"conversation {original.id} has turns 1 to {original.turns}; "
            f"it cannot be replayed from turn {from_turn}"
        )
    plan: dict[str, Any] = {
        "model": model,
        "system_prompt": system_prompt,
        "from_turn": from_turn,
        "live_tools": live_tools,
    }
    key = replay_key(original.id, plan)
    for earlier in store.replays_with_key(key):
        if unfinished(ledger, earlier):
            return earlier, True
    copied = store.unfinished_turns(original.id, from_turn - 1)
    if copied:
        raise UsageError(f"turn {copied[0]} of conversation {original.id} is not over yet")
    running = set(store.unfinished_turns(original.id, original.turns))  # not history yet
    said = [
        m
        for m in store.messages(original.id)
        if m.kind == "user" and m.turn >= from_turn and m.turn not in running
    ]
    plan["turns"] = [m.turn for m in said]
    now = store.clock()
    with store.transaction():
        replay = store.copy_conversation(
            ForkSpec(
                original=original.id,
                turn=from_turn - 1,
                channel=original.channel,
                title=f"replay of {original.title or UNTITLED}",
                ended=REPLAY,
                replay_key=key,
                replay_plan=plan,
            )
        )
        for m in said:
            message = Message(
                id=message_id(replay.id, m.turn),
                text=m.text,
                source_name=f"replay {replay.id[:12]} turn {m.turn:06d}",
                timestamp=now,
                content_hash=content_hash(json.dumps(m.content).encode()),
                channel=REPLAY,
                conversation=replay.id,
                metadata={REPLAY: replay.id, REPLAY_TURN: m.turn},
                attachments=tuple(attachments_in(m.content)),
            )
            ledger.admit(message, channel=REPLAY, claimed_path=None)
    fork = store.fork_of(replay.id)
    assert fork is not None
    logger.info("replay %s of conversation %s: %d turns", replay.id, original.id, len(said))
    return fork, False
