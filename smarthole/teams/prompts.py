"""The words of a team task: each agent's system prompt, its turn's request, the tool texts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..config.teams import TeamAgent
from ..db.tasks import AgentTurn, Task

# The team tools' names (``builtins.teams`` registers them; the runner offers them).
START_TASK = "start_task"
FINISH_TASK = "finish_task"
TEAM_TOOLS = frozenset({START_TASK, FINISH_TASK})

# Scripted fakes find the agent of a request by this line (RecordedRequest.agent).
AGENT_LINE = 'You are the agent "{name}" in a team of agents working on one task.'


def agent_system(agent: TeamAgent, task: Task) -> list[dict[str, str]]:
    """The agent's own instructions, then how the team works (the same on each of its turns)."""
    others = [name for name in task.agents if name != agent.name]
    team = (
        f"{AGENT_LINE.format(name=agent.name)}\n"
        f"The agents take turns in this order: {', '.join(task.agents)}"
        f" ({len(task.agents)} in all). "
        + (
            f"The others see what you write in your turn: {', '.join(others)}."
            if others
            else "You are the only one, so each turn continues your own work."
        )
        + "\nWrite your contribution as your reply. When the task is done, call finish_task "
        "with the final result. You cannot ask the user questions: decide sensibly and say "
        "what you assumed."
    )
    blocks = [{"type": "text", "text": agent.instructions}] if agent.instructions else []
    return [*blocks, {"type": "text", "text": team}]


def turn_request(task: Task, index: int, done: Sequence[AgentTurn]) -> str:
    """What agent turn ``index`` (from 0) is asked: the task, the turns so far, what is left."""
    n = len(task.agents)
    remaining = task.max_turns - index - 1
    left = f"{remaining} turn{' remains' if remaining == 1 else 's remain'} after this one"
    parts = [f"# Task\n{task.task.strip()}"]
    if index == 0:
        others = ", ".join(task.agents[1:]) or "none"
        parts.append(
            f"You go first. {n} agent{'s' if n != 1 else ''} take part (the others: {others}). "
            f"This is turn 1 of at most {task.max_turns}; {left}."
        )
    else:
        transcript = "\n\n".join(
            f"## Turn {turn.index + 1}: {turn.agent}\n{turn.text.strip()}" for turn in done
        )
        parts.append(f"# The turns so far\n{transcript}")
        parts.append(f"This is turn {index + 1} of at most {task.max_turns}; {left}.")
    return "\n\n".join(parts)


def start_task_description(agents: Mapping[str, TeamAgent], default_turns: int) -> str:
    listed = "\n".join(f"- {agent.name}: {agent.description}" for agent in agents.values())
    return (
        "Hand a task to a team of agents and wait for their result. The agents take turns in "
        "the order given, each seeing the task and all earlier turns, until one calls "
        f"finish_task or max_turns agent turns have run (default {default_turns}). The result "
        "starts with a status line, such as 'completed after 4 of 6 turns'. The team's work "
        "is not shown to the user: tell them what matters.\n\n"
        f"The agents:\n{listed}"
    )


FINISHED_BY_TOOL = "The task will finish after this turn with your result."
NO_HUMAN = (
    "team agents cannot message the user or end the conversation; put what matters in your "
    "turn's text"
)


def completed_note(done: int, max_turns: int) -> str:
    return f"completed after {done} of {max_turns} turns"


def missing_note(agent: str) -> str:
    return f'stopped: agent "{agent}" is no longer configured'


ABORTED_NOTE = "aborted by the user"


def outcome_text(note: str | None, result: str | None) -> str:
    """The ``start_task`` result: the status line, then the team's result."""
    parts: Iterable[str] = (p.strip() for p in (note, result) if p and p.strip())
    return "\n\n".join(parts)
