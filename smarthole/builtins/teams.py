"""Built-in team tools: ``start_task`` for the entry agent, ``finish_task`` for team agents.

Registered through ``hookimpl`` like any plugin's tools. Who is offered which is the teams
runner's rule (``teams.runner``): ``start_task`` goes to the entry agent once a team agent is
configured, its description listing them; ``finish_task`` to each team agent, and to no one
else. ``start_task`` runs the task on the runner of the app's composition root.
"""

from __future__ import annotations

from typing import Any

from .. import hookimpl
from ..errors import ToolError
from ..teams.prompts import FINISH_TASK, FINISHED_BY_TOOL, START_TASK
from ..tools import ToolContext


@hookimpl
def register_tools(register: Any) -> None:
    # Both are safe to run again after a crash: a task is found by the id of the call that
    # started it, and finish_task only reads its argument.
    register(start_task, idempotent=True, name=START_TASK)
    register(finish_task, idempotent=True, name=FINISH_TASK)


def start_task(
    task: str, agents: list[str], max_turns: int | None = None, *, context: ToolContext
) -> str:
    """Hand a task to a team of agents.

    Re-running it after a crash is safe: the task is found by this call's id and resumed.

    :param task: What the team should do, with everything they need to know.
    :param agents: The agents taking part, in turn order (names from the list).
    :param max_turns: How many agent turns at most.
    """
    from ..daemon.runtime import Runtime

    runner = Runtime.of(context.app).teams
    return runner.start_from_tool(task, agents, max_turns, context)


def finish_task(result: str, *, context: ToolContext) -> str:
    """Finish the team's task with its final result; the task ends after your turn.

    The result goes to the agent who started the task, so make it complete and self-contained.

    :param result: The final result of the task.
    """
    if not result.strip():
        raise ToolError("result is required and must be a non-empty string.")
    return FINISHED_BY_TOOL
