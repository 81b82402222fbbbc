"""What the pages and the JSON API show, read from the store: plain values, no HTML.

The left pane is the person's conversation: their messages and what the entry agent said to
them (the outbox items), turn by turn. The right pane is one human turn's team work: its
tasks, each agent turn with its text and tool calls. Nothing of a task is ever part of the
left pane, as nothing of it is ever a message of the human conversation in the store.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..agent.prompts import UNTITLED
from ..config.prices import as_dollars, dollars
from ..conversations import resolve_conversation
from ..db.approvals import Approval, Approvals
from ..db.pending import PendingQuestions
from ..db.records import Conversation
from ..db.schedules import Schedules
from ..db.search import Search, SearchHit
from ..db.spend import Spend
from ..db.states import OutboxKind, TurnStatus
from ..db.store import Store
from ..db.tasks import Task, Tasks
from ..db.usage import UsageTotals
from ..db.webviews import Said, TaskStep, WebViews
from ..errors import UsageError
from ..formats import iso
from .transcript import COMMAND_SENT, add_commands, decision, insert_by_time

PAGE_SIZE = 50  # conversations on a page of the list
SEARCH_HITS = 50  # hits a search shows
TURNS_SHOWN = 50  # human turns a conversation page shows at first; earlier ones on demand


class RowState(StrEnum):
    """A conversation's state as the web view shows it (derived from its turns, not stored)."""

    NEW = "new"
    RUNNING = "running"
    WAITING = "waiting"  # for the person: a question asked, or a tool call to approve
    ANSWERED = "answered"
    ERROR = "error"


STATES = {
    RowState.NEW: "new",
    RowState.RUNNING: "running",
    RowState.WAITING: "waiting for your answer",
    RowState.ANSWERED: "answered",
    RowState.ERROR: "error",
}
RUNNING_TURNS = (TurnStatus.RUNNING, TurnStatus.INTERRUPTED, TurnStatus.DEFERRED)


def state_of(last_turn: TurnStatus | None, waiting: bool, approving: bool = False) -> RowState:
    """A conversation's state as a person reads it, from its latest turn (``approving``: a
    tool call of that turn waits for the person's approval)."""
    if approving:
        return RowState.WAITING
    if last_turn is None:
        return RowState.NEW
    if last_turn in RUNNING_TURNS:
        return RowState.RUNNING
    if last_turn is TurnStatus.FAILED:
        return RowState.ERROR
    return RowState.WAITING if waiting else RowState.ANSWERED


@dataclass(frozen=True)
class ConversationRow:
    conversation: Conversation
    state: RowState

    @property
    def title(self) -> str:
        return self.conversation.title or UNTITLED

    @property
    def state_label(self) -> str:
        return STATES[self.state]

    def as_dict(self) -> dict[str, Any]:
        c = self.conversation
        return {
            "id": c.id,
            "title": self.title,
            "channel": c.channel,
            "state": self.state,
            "turns": c.turns,
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "ended_at": iso(c.ended_at) if c.ended_at else None,
        }


@dataclass(frozen=True)
class ConversationPage:
    rows: list[ConversationRow]
    page: int
    pages: int
    total: int


@dataclass(frozen=True)
class SearchResults:
    """A search from the Conversations page: its hits, or why it could not run."""

    query: str
    hits: list[SearchHit]
    error: str | None = None


@dataclass(frozen=True)
class HumanTurn:
    """One human turn of the left pane: what was said in it, in order."""

    number: int
    said: list[Said]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: Any
    result: str | None
    is_error: bool

    @property
    def input_text(self) -> str:
        return json.dumps(self.input, indent=2, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class AgentTurnView:
    """One agent turn of a task: finished (its stored text), or the one in progress."""

    index: int
    agent: str
    text: str
    finished: bool
    tool_calls: list[ToolCall] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "agent": self.agent,
            "text": self.text,
            "finished": self.finished,
            "tool_calls": [
                {"name": c.name, "input": c.input, "result": c.result, "is_error": c.is_error}
                for c in self.tool_calls
            ],
        }


@dataclass(frozen=True)
class TaskView:
    task: Task
    turns: list[AgentTurnView]

    @property
    def running(self) -> bool:
        return not self.task.finished

    def as_dict(self) -> dict[str, Any]:
        t = self.task
        return {
            "id": t.id,
            "turn": t.turn,
            "status": t.status,
            "task": t.task,
            "agents": list(t.agents),
            "max_turns": t.max_turns,
            "note": t.note,
            "result": t.result,
            "created_at": iso(t.created_at),
            "finished_at": iso(t.finished_at) if t.finished_at else None,
            "agent_turns": [turn.as_dict() for turn in self.turns],
        }


@dataclass(frozen=True)
class SessionBar:
    """The top of a conversation: its turn, state, the running task and the turn's tokens."""

    conversation: ConversationRow
    agent: str | None  # the running task's agent, if a task runs
    step: int | None  # its agent turn, from 1
    max_turns: int | None
    usage: UsageTotals
    cost: int | None = None  # the turn's responses, in micro-dollars; None: price unknown

    @property
    def cost_text(self) -> str:
        return dollars(self.cost)

    @property
    def turn(self) -> int:
        return self.conversation.conversation.turns

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens + self.usage.cache_creation_input_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "state": self.conversation.state,
            "task_agent": self.agent,
            "task_turn": self.step,
            "task_max_turns": self.max_turns,
            "tokens": {
                "input": self.input_tokens,
                "output": self.usage.output_tokens,
                "cached": self.usage.cache_read_input_tokens,
            },
            "cost": as_dollars(self.cost),
        }


class Reader:
    """The web view's reads of one store."""

    def __init__(
        self,
        store: Store,
        tasks: Tasks,
        pending: PendingQuestions,
        search: Search,
        approvals: Approvals,
        schedules: Schedules,
    ) -> None:
        self.store = store
        self.schedules = schedules
        self.views = WebViews(store)
        self.tasks = tasks
        self.pending = pending
        self.finder = search
        self.approvals = approvals

    # -- conversations ----------------------------------------------------------------------

    def conversations(self, page: int = 1) -> ConversationPage:
        page = max(page, 1)
        found, total = self.views.conversation_page(limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
        statuses = self.views.last_turn_statuses([c.id for c in found])
        waiting = {q.conversation_id for q in self.pending.all()}
        approving = {a.conversation_id for a in self.approvals.waiting()}
        rows = [
            ConversationRow(c, state_of(statuses.get(c.id), c.id in waiting, c.id in approving))
            for c in found
        ]
        return ConversationPage(rows, page, max(1, math.ceil(total / PAGE_SIZE)), total)

    def search(self, query: str) -> SearchResults:
        """What ``smarthole search`` finds for ``query``, best first."""
        try:
            return SearchResults(query, self.finder.search(query, limit=SEARCH_HITS))
        except UsageError as exc:
            return SearchResults(query, [], str(exc))

    def conversation(self, wanted: str) -> ConversationRow:
        """A conversation by id or unique prefix; ``LookupFailed`` otherwise."""
        conversation = resolve_conversation(self.store, wanted)
        last = self.store.turn(conversation.id, conversation.turns)
        waiting = self.pending.get(conversation.id) is not None
        approving = bool(self.waiting_approvals(conversation.id))
        status = last.status if last else None
        return ConversationRow(conversation, state_of(status, waiting, approving))

    def waiting_approvals(self, conversation_id: str) -> list[Approval]:
        """The tool calls of this conversation that wait for the person's approval."""
        return [a for a in self.approvals.of_conversation(conversation_id) if a.waiting]

    # -- the left pane ----------------------------------------------------------------------

    def human_turns(
        self, conversation: Conversation, *, first: int | None = None, last: int | None = None
    ) -> list[HumanTurn]:
        """Turns ``first..last`` (default: the latest ``TURNS_SHOWN``), oldest first."""
        last = conversation.turns if last is None else min(last, conversation.turns)
        first = max(1, last - TURNS_SHOWN + 1) if first is None else max(1, first)
        grouped: dict[int, list[Said]] = {}
        for said in self.views.said(conversation.id, first, last):
            if said.kind != OutboxKind.APPROVAL:  # the card asks; the transcript says the outcome
                grouped.setdefault(said.turn, []).append(said)
        for approval in self.approvals.of_conversation(conversation.id):
            if first <= approval.turn <= last and not approval.waiting:
                insert_by_time(grouped.setdefault(approval.turn, []), decision(approval))
        add_commands(grouped, self.views, conversation.id, first, last)
        return [HumanTurn(n, grouped[n]) for n in sorted(grouped)]

    # -- the right pane ---------------------------------------------------------------------

    def team(self, conversation: Conversation, turn: int) -> list[TaskView]:
        """The tasks of one human turn, each with its agent turns."""
        return [self.task_view(t) for t in self.views.tasks_of_turn(conversation.id, turn)]

    def team_between(self, conversation: Conversation, first: int, last: int) -> list[TaskView]:
        tasks = self.views.tasks_between(conversation.id, first, last)
        return [self.task_view(t) for t in tasks]

    def turns_with_tasks(self, conversation: Conversation) -> list[tuple[int, int]]:
        return self.views.turns_with_tasks(conversation.id)

    def task_view(self, task: Task) -> TaskView:
        done = self.tasks.turns(task.id)
        steps = self.views.task_steps(task.id)
        views = [
            AgentTurnView(t.index, t.agent, t.text, True, _tool_calls(steps, t.index)) for t in done
        ]
        if not task.finished and len(done) < task.max_turns:
            index = len(done)
            agent = task.agents[index % len(task.agents)]
            words = [_text(s) for s in steps if s.agent_turn == index and s.kind == "assistant"]
            text = "\n\n".join(w for w in words if w.strip())
            views.append(AgentTurnView(index, agent, text, False, _tool_calls(steps, index)))
        return TaskView(task, views)

    # -- the session bar --------------------------------------------------------------------

    def bar(self, row: ConversationRow) -> SessionBar:
        conversation = row.conversation
        usage = self.views.turn_usage(conversation.id, conversation.turns)
        cost = Spend(self.store).turn_cost(conversation.id, conversation.turns)
        tasks = self.views.tasks_of_turn(conversation.id, conversation.turns)
        active = next((t for t in reversed(tasks) if not t.finished), None)
        if active is None:
            return SessionBar(row, None, None, None, usage, cost)
        done = self.tasks.turn_count(active.id)
        step = min(done + 1, active.max_turns)
        agent = active.agents[(step - 1) % len(active.agents)]
        return SessionBar(row, agent, step, active.max_turns, usage, cost)

    # -- tasks ------------------------------------------------------------------------------

    def task_listing(self) -> list[tuple[Task, int]]:
        """Running tasks and the recent others, newest first, with their turns done."""
        return [(t, self.tasks.turn_count(t.id)) for t in self.tasks.listing()]


def said_dict(said: Said, *, pending: bool = False) -> dict[str, Any]:
    return {
        "turn": said.turn,
        "role": "human" if said.kind in ("user", COMMAND_SENT) else "agent",
        "kind": "response" if said.kind == "assistant" else str(said.kind),
        "text": said.text,
        "at": iso(said.created_at),
        "pending_question": pending,
        "attachments": [a.to_dict() for a in said.attachments],
    }


def _text(step: TaskStep) -> str:
    return "\n".join(b["text"] for b in step.content if b.get("type") == "text")


def _tool_calls(steps: list[TaskStep], index: int) -> list[ToolCall]:
    results: dict[str, tuple[str, bool]] = {}
    for step in steps:
        if step.agent_turn == index and step.kind == "tool_result":
            for block in step.content:
                if block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = (
                        _result_text(block.get("content")),
                        bool(block.get("is_error")),
                    )
    calls = []
    for step in steps:
        if step.agent_turn != index or step.kind != "assistant":
            continue
        for block in step.content:
            if block.get("type") == "tool_use":
                result = results.get(str(block.get("id")))
                text, failed = result or (None, False)
                name = str(block.get("name"))
                calls.append(ToolCall(str(block.get("id")), name, block.get("input"), text, failed))
    return calls


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return json.dumps(content, default=str)
