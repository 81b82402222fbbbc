"""The loop of a team task: agents take turns until one finishes it or the turns run out.

Agent turn k (from 0) belongs to participant k mod n. The loop is rebuilt from the store each
time it starts: turns done = stored agent turns, so a task resumed after a crash goes on at
the right turn with the right agent, and a completed turn is never run twice. Each step and its
event commit together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.memory import TOOL_NAME as MEMORY_TOOL
from ..agent.memory import team_memory_tool
from ..db.states import TaskStatus
from ..db.tasks import AgentTurn, Task
from ..errors import InternalError, TeamRequestError, ToolError
from ..mcpservers import tool_matches
from ..tools import ToolContext, ToolSet
from .prompts import (
    ABORTED_NOTE,
    FINISH_TASK,
    START_TASK,
    TEAM_TOOLS,
    agent_system,
    completed_note,
    missing_note,
    outcome_text,
    start_task_description,
    turn_request,
)
from .session import AgentTurnSession, HumanTurn, TaskAborted

if TYPE_CHECKING:
    from ..agent.loop import Agent
    from ..app import App
    from ..attachments import Attachment
    from ..config.teams import TeamAgent
    from ..db.events import EventLog
    from ..db.records import Message, StoredMessage
    from ..db.tasks import Tasks
    from ..db.usage import UsageLog

Ending = tuple[TaskStatus, str, str | None]  # status, note, result


@dataclass(frozen=True)
class TaskRequest:
    task: str
    agents: list[str]
    max_turns: int | None = None
    attachments: tuple[Attachment, ...] = ()  # the message's: its first agent sees them


class TeamRunner:
    """Starts and resumes tasks for the human turns of one daemon (or one CLI command)."""

    def __init__(
        self,
        app: App,
        agent: Agent,
        events: EventLog,
        tasks: Tasks,
        usage: UsageLog,
        *,
        stop: threading.Event | None = None,
    ) -> None:
        self.app = app
        self.agent = agent
        self.events = events
        self.tasks = tasks
        self.usage = usage
        self.stop = stop
        self._running: set[str] = set()
        self._lock = threading.Lock()
        # The entry agent's tools, made again only when the registry's tools or the team change
        # (the same list each turn keeps the request's bytes, and the prompt cache, the same).
        self._entry: tuple[object, object, ToolSet] | None = None

    @property
    def team(self) -> dict[str, TeamAgent]:
        return self.app.team

    # -- what each agent is offered ---------------------------------------------------------

    def entry_tools(self, tools: ToolSet) -> ToolSet:
        """``tools`` as the entry agent is offered them: never ``finish_task``, and
        ``start_task`` (its description listing the agents) when at least one is configured."""
        team, specs = self.team, tools.specs()
        if self._entry is None or self._entry[0] is not specs or self._entry[1] is not team:
            start = tools.get(START_TASK) if team else None
            if start is not None:
                description = start_task_description(team, self.app.config.teams.max_turns)
                start = dataclasses.replace(start, description=description)
            offered = tools.only(lambda name: name not in TEAM_TOOLS, *filter(None, [start]))
            self._entry = (specs, team, offered)
        return self._entry[2]

    def agent_tools(self, agent: TeamAgent) -> ToolSet:
        """What team agent ``agent`` is offered: the tools it is allowed, then ``finish_task``."""
        tools = self.app.tools

        def allowed(name: str) -> bool:
            return (
                name not in TEAM_TOOLS
                and name != MEMORY_TOOL  # given by its ``memory = true`` alone
                and any(tool_matches(a, name) for a in agent.tools)
            )

        memory = team_memory_tool(tools, agent.name) if agent.memory else None
        return tools.only(allowed, *filter(None, [memory, tools.get(FINISH_TASK)]))

    def start_from_tool(
        self, task: str, agents: list[str], max_turns: int | None, context: ToolContext
    ) -> str:
        """The ``start_task`` tool's call: run the task, and its result as the tool's text."""
        place = HumanTurn(
            context.conversation_id, context.channel, context.turn, context.message_id
        )
        try:
            record = self.run(place, context.tool_use_id, TaskRequest(task, agents, max_turns))
        except TeamRequestError as exc:
            raise ToolError(str(exc)) from exc
        return outcome_text(record.note, record.result)

    def answer(self, message: Message, place: HumanTurn) -> str:
        """Run the team an inbox file asked for (its text is the task); returns the reply.

        A normal completion replies with the result alone; any other ending leads with its
        status line, so the person knows the result is partial.
        """
        assert message.agents is not None
        request = TaskRequest(
            message.text, list(message.agents), message.max_turns, message.attachments
        )
        task = self.run(place, message.id, request)
        if (
            task.status is TaskStatus.COMPLETED
            and task.result
            and task.note == completed_note(self.tasks.turn_count(task.id), task.max_turns)
        ):
            return task.result
        return outcome_text(task.note, task.result)

    # -- starting and resuming --------------------------------------------------------------

    def check(self, request: TaskRequest) -> tuple[list[str], int]:
        """The participants and max_turns of a valid request; ``TeamRequestError`` otherwise."""
        limits = self.app.config.teams
        configured = ", ".join(self.team) or "none"
        if not request.task.strip():
            raise TeamRequestError("the task is empty")
        if not request.agents:
            raise TeamRequestError(f"name at least one agent; the configured agents: {configured}")
        for name in request.agents:
            if name not in self.team:
                raise TeamRequestError(
                    f"unknown agent {name!r}; the configured agents: {configured}"
                )
            if request.agents.count(name) > 1:
                raise TeamRequestError(f"agent {name!r} is listed more than once")
        if len(request.agents) > limits.max_agents:
            raise TeamRequestError(
                f"at most {limits.max_agents} agents may take part ({len(request.agents)} named)"
            )
        max_turns = limits.max_turns if request.max_turns is None else request.max_turns
        if not 1 <= max_turns <= limits.max_turns_limit:
            raise TeamRequestError(
                f"max_turns must be between 1 and {limits.max_turns_limit} (got {max_turns})"
            )
        return list(request.agents), max_turns

    def run(self, place: HumanTurn, started_by: str, request: TaskRequest) -> Task:
        """Start the task ``started_by`` asks for, or resume it; returns it finished."""
        task = self.tasks.by_starter(place.conversation_id, started_by)
        if task is None:
            agents, max_turns = self.check(request)
            with self.app.store.transaction() as db:
                task, created = self.tasks.create(
                    conversation_id=place.conversation_id,
                    turn=place.turn,
                    message_id=place.message_id,
                    started_by=started_by,
                    task=request.task.strip(),
                    agents=agents,
                    max_turns=max_turns,
                    db=db,
                )
                if created:
                    self._event("task_started", task, place, db, agents=agents, max_turns=max_turns)
        with self._exclusive(task.id):
            return self._drive(task, place, request.attachments)

    @contextlib.contextmanager
    def _exclusive(self, task_id: str) -> Iterator[None]:
        """One loop per task: a second one would run its agent turns twice."""
        with self._lock:
            if task_id in self._running:
                raise InternalError(f"task {task_id} is already running")
            self._running.add(task_id)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(task_id)

    # -- the loop ---------------------------------------------------------------------------

    def _drive(
        self, task: Task, place: HumanTurn, attachments: tuple[Attachment, ...] = ()
    ) -> Task:
        if task.finished:
            return task
        if task.status is not TaskStatus.ACTIVE:
            self.tasks.set_status(task.id, TaskStatus.ACTIVE)
        done = self.tasks.turns(task.id)
        try:
            while (ending := self._ending(task, done)) is None:
                done.append(self._agent_turn(task, len(done), done, place, attachments))
                current = self.tasks.get(task.id)
                if current is not None and current.finished:  # finish_task ended it
                    return current
        except TaskAborted:
            ending = (TaskStatus.ABORTED, ABORTED_NOTE, _last_text(done))
        # A TurnError or TurnInterrupted ends the human turn's attempt, and the transition
        # that records it (pipeline.lifecycle) interrupts this task in the same commit.
        with self.app.store.transaction() as db:
            self._finish(db, task, place, *ending, agent_turns=len(done))
        finished = self.tasks.get(task.id)
        assert finished is not None
        return finished

    def _ending(self, task: Task, done: list[AgentTurn]) -> Ending | None:
        """How the task ends before agent turn ``len(done)``, or None to run that turn."""
        current = self.tasks.get(task.id)
        if current is not None and current.abort_requested:
            return (TaskStatus.ABORTED, ABORTED_NOTE, _last_text(done))
        if len(done) >= task.max_turns:
            note = completed_note(len(done), task.max_turns)
            return (TaskStatus.COMPLETED, note, _last_text(done))
        name = task.agents[len(done) % len(task.agents)]
        if name not in self.team:
            return (TaskStatus.COMPLETED, missing_note(name), _last_text(done))
        return None

    def _agent_turn(
        self,
        task: Task,
        index: int,
        done: list[AgentTurn],
        place: HumanTurn,
        attachments: tuple[Attachment, ...] = (),
    ) -> AgentTurn:
        agent = self.team[task.agents[index % len(task.agents)]]
        turn_fields = {"agent": agent.name, "agent_turn": index + 1, "max_turns": task.max_turns}
        if not self.tasks.messages(task.id, index):
            request = [{"type": "text", "text": turn_request(task, index, done)}]
            if index == 0:  # the message's attachments go to the first agent
                request = [a.to_block() for a in attachments] + request
            with self.app.store.transaction() as db:
                self.tasks.append_message(task.id, index, "user", "user", request, db=db)
                self._event("agent_turn_started", task, place, db, **turn_fields)
        session = AgentTurnSession(
            self.app,
            self.tasks,
            self.usage,
            task,
            index,
            agent_system(agent, task),
            place,
            self.stop,
            events=self.events,
            approve=agent.approve,
        )
        outcome = self.agent.run(session, tools=self.agent_tools(agent), model=agent.model)
        messages = self.tasks.messages(task.id, index)
        calls = [block["name"] for m in messages if m.kind == "assistant" for block in m.tool_uses]
        result = _finish_result(messages)
        text = outcome.text or result or ""
        with self.app.store.transaction() as db:
            self.tasks.add_turn(task.id, index, agent.name, text, calls, db=db)
            self._event("agent_turn_finished", task, place, db, **turn_fields)
            if result is not None:
                note = completed_note(index + 1, task.max_turns)
                ending = (TaskStatus.COMPLETED, note, result)
                self._finish(db, task, place, *ending, agent_turns=index + 1)
        return AgentTurn(task.id, index, agent.name, text, tuple(calls), self.app.now())

    def _finish(
        self,
        db: sqlite3.Connection,
        task: Task,
        place: HumanTurn,
        status: TaskStatus,
        note: str,
        result: str | None,
        *,
        agent_turns: int,
    ) -> None:
        self.tasks.set_status(task.id, status, note=note, result=result or "", db=db)
        self._event("task_finished", task, place, db, status=status, agent_turns=agent_turns)

    def _event(
        self, type: str, task: Task, place: HumanTurn, db: sqlite3.Connection, **data: Any
    ) -> None:
        self.events.emit(type, **place.where, db=db, task=task.id, **data)


def _finish_result(messages: list[StoredMessage]) -> str | None:
    """The result of the last successful ``finish_task`` call of an agent turn, if any."""
    failed = {
        m.tool_use_id
        for m in messages
        if m.kind == "tool_result" and any(b.get("is_error") for b in m.content)
    }
    calls = [b for m in messages if m.kind == "assistant" for b in m.tool_uses]
    for block in reversed(calls):
        if block["name"] == FINISH_TASK and block["id"] not in failed:
            arguments = block.get("input")
            if isinstance(arguments, dict) and isinstance(arguments.get("result"), str):
                return str(arguments["result"]).strip()
    return None


def _last_text(done: list[AgentTurn]) -> str | None:
    return done[-1].text if done else None
