"""What a replay did beside what the original did, turn by turn, from the store.

Each replayed turn: the person's message, each side's final reply, tokens, cost (``None``
until prices are known: a cost column waits for them), and tool calls, each one recorded (the
original's result stood in), refused (no recorded result) or live (it ran); and whether the
two sides differ. ``real_runs`` counts the replay's real tool runs (its tool-call intent rows):
0 without ``--live-tools``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent.standin import REFUSED
from ..db.states import TurnStatus
from ..db.usage import UsageTotals
from .replaying import ReplayPlan, message_id, unfinished

if TYPE_CHECKING:
    from ..db.forking import Fork
    from ..db.ledger import Ledger
    from ..db.records import StoredMessage
    from ..db.store import Store
    from ..db.usage import UsageLog

RECORDED, REFUSED_CALL, LIVE, RAN = "recorded", "refused", "live", "ran"


@dataclass(frozen=True)
class Side:
    """One side of a turn: its reply, its tokens and its tool calls (name, how answered)."""

    reply: str | None  # None: no reply (yet)
    status: str
    usage: UsageTotals = field(default_factory=UsageTotals)
    cost_micros: int | None = None  # micro-dollars, once prices are known (issue 44)
    tools: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reply": self.reply,
            "status": self.status,
            "input_tokens": self.usage.input_tokens,
            "output_tokens": self.usage.output_tokens,
            "cache_read_input_tokens": self.usage.cache_read_input_tokens,
            "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
            "cost_micros": self.cost_micros,
            "tool_calls": [{"tool": name, "how": how} for name, how in self.tools],
        }


@dataclass(frozen=True)
class TurnPair:
    turn: int  # the original's turn number
    said: str
    original: Side
    replay: Side

    @property
    def differs(self) -> bool:
        """Whether the replies, or the tools called (in order), are not the same."""
        return self.original.reply != self.replay.reply or [n for n, _ in self.original.tools] != [
            n for n, _ in self.replay.tools
        ]


@dataclass(frozen=True)
class ReplayReport:
    replay: str
    original: str
    title: str
    model: str | None
    system_prompt: bool
    live_tools: bool
    from_turn: int
    finished: bool
    real_runs: int
    turns: list[TurnPair]

    def counts(self) -> dict[str, int]:
        """The replay's tool calls by how each was answered."""
        found = {RECORDED: 0, REFUSED_CALL: 0, LIVE: 0}
        for pair in self.turns:
            for _, how in pair.replay.tools:
                found[how] = found.get(how, 0) + 1
        return found

    def as_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "turns"}
        data["tool_calls"] = self.counts()
        data["differing_turns"] = [p.turn for p in self.turns if p.differs]
        data["turns"] = [
            {
                "turn": p.turn,
                "said": p.said,
                "differs": p.differs,
                "original": p.original.as_dict(),
                "replay": p.replay.as_dict(),
            }
            for p in self.turns
        ]
        return data


def replay_report(store: Store, ledger: Ledger, usage: UsageLog, fork: Fork) -> ReplayReport:
    """The report of replay ``fork`` as the store has it now (finished or not)."""
    conversation = store.conversation(fork.conversation_id)
    assert conversation is not None
    plan = ReplayPlan.of(conversation, fork)
    original_usage = _usage_by_turn(usage, plan.original)
    replay_usage = _usage_by_turn(usage, conversation.id)
    live = store.tool_runs(conversation.id, after_turn=plan.from_turn - 1)
    pairs = []
    for number in plan.turns:
        said = store.messages(plan.original, turn=number)
        original_turn = store.turn(plan.original, number)
        original = Side(
            _reply(said),
            str(original_turn.status) if original_turn else "forgotten",
            original_usage.get(number, UsageTotals()),
            tools=[(name, RAN) for name, _ in _calls(said)],
        )
        replayed = store.turn_for_message(message_id(conversation.id, number))
        if replayed is None:
            side = Side(None, "queued")
        else:
            stored = store.messages(conversation.id, turn=replayed.number)
            side = Side(
                _reply(stored) if replayed.status == TurnStatus.COMPLETED else None,
                str(replayed.status),
                replay_usage.get(replayed.number, UsageTotals()),
                tools=[(name, _how(call, live)) for name, call in _calls(stored)],
            )
        text = next((m.text for m in said if m.kind == "user"), "")
        pairs.append(TurnPair(number, text, original, side))
    return ReplayReport(
        replay=conversation.id,
        original=plan.original,
        title=conversation.title or "",
        model=plan.model,
        system_prompt=plan.system_prompt is not None,
        live_tools=plan.live_tools,
        from_turn=plan.from_turn,
        finished=not unfinished(ledger, fork),
        real_runs=sum(live.values()),
        turns=pairs,
    )


def _usage_by_turn(usage: UsageLog, conversation_id: str) -> dict[int, UsageTotals]:
    return {
        g.turn: g.totals
        for g in usage.for_conversation(conversation_id)
        if g.what == "turn" and g.turn is not None
    }


def _reply(messages: list[StoredMessage]) -> str | None:
    said = [m.text for m in messages if m.kind == "assistant" and m.text.strip()]
    return said[-1].strip() if said else None


def _calls(messages: list[StoredMessage]) -> list[tuple[str, tuple[str, dict[str, Any] | None]]]:
    """Each tool call of a turn, in order: its tool, its id and its stored result block."""
    results = {m.tool_use_id: m.content[0] for m in messages if m.kind == "tool_result"}
    return [
        (block.get("name", ""), (block.get("id", ""), results.get(block.get("id"))))
        for m in messages
        if m.kind == "assistant"
        for block in m.tool_uses
    ]


def _how(call: tuple[str, dict[str, Any] | None], live: dict[str, int]) -> str:
    """How a replayed call was answered: it ran, it was refused, or a record stood in."""
    tool_id, result = call
    if tool_id in live:
        return LIVE
    if result is not None and result.get("is_error") and result.get("content") == REFUSED:
        return REFUSED_CALL
    return RECORDED
