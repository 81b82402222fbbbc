"""Agent teams: the entry agent hands a task to named agents that take turns.

``runner`` drives a task's loop (start, resume, finish); ``session`` is one agent turn as the
agent loop sees it, stored in the task's own tables; ``prompts`` holds the words. The human
conversation only ever sees the ``start_task`` call and its result.
"""

from .runner import TaskRequest, TeamRunner
from .session import HumanTurn

__all__ = ["HumanTurn", "TaskRequest", "TeamRunner"]
