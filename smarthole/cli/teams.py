"""Agent teams for people: the agents, and the tasks with their turns, as ``smarthole agents``
and ``tasks`` (list, show, abort) print them (``cli.commands.teams`` declares the commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LookupFailed
from .common import daemon_pid
from .output import one_line, print_json, short

if TYPE_CHECKING:
    from ..db.store import Store
    from ..home import Home


def print_agents(home: Home, *, as_json: bool) -> None:
    """The entry agent first, then each team agent with its description, model and tools."""
    from ..app import App
    from ..config import load_config

    config = load_config(home)
    app = App.load(home, config)
    try:
        team = app.team
        entry_tools = [tool.name for tool in app.tools]
    finally:
        app.close()
    listed: list[dict[str, Any]] = [
        {
            "name": config.agent.name,
            "role": "entry",
            "description": "the agent you talk to",
            "model": config.model.name,
            "tools": entry_tools + (["start_task"] if team else []),
        }
    ]
    for agent in team.values():
        listed.append(
            {
                "name": agent.name,
                "role": "team",
                "description": agent.description,
                "model": agent.model,
                "tools": [*agent.tools, "finish_task"],
            }
        )
    if as_json:
        print_json(listed)
        return
    for entry in listed:
        role = " (entry agent)" if entry["role"] == "entry" else ""
        print(f"{entry['name']}{role}: {entry['description']}")
        print(f"  model: {entry['model']}")
        print(f"  tools: {', '.join(entry['tools']) or 'none'}")
    if not team:
        print("No team agents: add [agents.<name>] tables to config.toml (see the README).")


def print_tasks(store: Store, *, everything: bool, as_json: bool) -> None:
    """Running tasks and the last ten (``everything``: all of them), one line each."""
    from ..db.tasks import Tasks
    from ..teams.control import describe

    table = Tasks(store)
    listed = [describe(t, table.turn_count(t.id)) for t in table.listing(everything=everything)]
    if as_json:
        print_json(listed)
        return
    if not listed:
        print("No tasks yet.")
    for task in listed:
        first = task["task"].strip().splitlines()[0] if task["task"].strip() else ""
        print(
            f"{task['id']}  {task['status']:<11} conv={task['conversation'][:8]} "
            f"agents={','.join(task['agents'])} turns={task['turns_done']}/{task['max_turns']} "
            f"{task['created_at'][:16].replace('T', ' ')}  {short(first)}"
        )


def print_task(store: Store, wanted: str, *, as_json: bool) -> None:
    """Task ``wanted`` (an id or a unique prefix) and each of its agent turns."""
    from ..db.tasks import Tasks
    from ..teams.control import describe

    table = Tasks(store)
    task = table.find(wanted)
    turns = table.turns(task.id)
    data = describe(task, len(turns))
    data["result"] = task.result
    data["turns"] = [{"agent": t.agent, "index": t.index, "text": t.text} for t in turns]
    if as_json:
        print_json(data)
        return
    print(f"Task {task.id}: {task.status}" + (f" ({one_line(task.note)})" if task.note else ""))
    print(f"Conversation {task.conversation_id}, turn {task.turn}")
    print(f"Agents: {', '.join(task.agents)}; turns {len(turns)} of at most {task.max_turns}")
    print(f"\n{task.task.strip()}\n")
    for turn in turns:
        names = ", ".join(one_line(name) for name in turn.tool_calls)
        tools = f" (tools: {names})" if turn.tool_calls else ""
        print(f"--- turn {turn.index + 1}: {turn.agent}{tools}")
        print(turn.text.strip() + "\n")
    if task.result and task.finished:
        print(f"Result:\n{task.result.strip()}")


def abort(home: Home, store: Store, wanted: str) -> str:
    """Stop task ``wanted`` after the model call in flight; returns what to tell the person."""
    from ..db.tasks import Tasks
    from ..teams.control import abort_task

    task = Tasks(store).find(wanted)
    if task.finished:
        raise LookupFailed(f"task {task.id} has already finished ({task.status})")
    if abort_task(store, task, loop_may_run=daemon_pid(home) is not None):
        return f"Task {task.id} aborted; the entry agent hears it when its turn goes on."
    return f"Task {task.id} will stop after the model call in flight returns."
