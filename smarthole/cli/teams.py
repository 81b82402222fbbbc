"""``smarthole agents``, ``tasks`` (list, show, abort) and ``import``: agent teams for people."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import LookupFailed
from .commands import opened
from .output import one_line, print_json


def agents(args: argparse.Namespace) -> int:
    """The entry agent first, then each team agent with its description, model and tools."""
    from ..app import App
    from ..config import load_config

    with opened(args) as (home, _):
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
    if args.json:
        print_json(listed)
        return 0
    for entry in listed:
        role = " (entry agent)" if entry["role"] == "entry" else ""
        print(f"{entry['name']}{role}: {entry['description']}")
        print(f"  model: {entry['model']}")
        print(f"  tools: {', '.join(entry['tools']) or 'none'}")
    if not team:
        print("No team agents: add [agents.<name>] tables to config.toml (see the README).")
    return 0


def tasks(args: argparse.Namespace) -> int:
    from ..db.tasks import Tasks
    from ..teams.control import describe

    with opened(args) as (_, store):
        table = Tasks(store)
        listed = [describe(t, table.turn_count(t.id)) for t in table.listing(everything=args.all)]
    if args.json:
        print_json(listed)
        return 0
    if not listed:
        print("No tasks yet.")
    for task in listed:
        first = task["task"].strip().splitlines()[0] if task["task"].strip() else ""
        print(
            f"{task['id']}  {task['status']:<11} conv={task['conversation'][:8]} "
            f"agents={','.join(task['agents'])} turns={task['turns_done']}/{task['max_turns']} "
            f"{task['created_at'][:16].replace('T', ' ')}  {_short(first)}"
        )
    return 0


def show(args: argparse.Namespace) -> int:
    from ..db.tasks import Tasks
    from ..teams.control import describe

    with opened(args) as (_, store):
        table = Tasks(store)
        task = table.find(args.id)
        turns = table.turns(task.id)
    data = describe(task, len(turns))
    data["result"] = task.result
    data["turns"] = [{"agent": t.agent, "index": t.index, "text": t.text} for t in turns]
    if args.json:
        print_json(data)
        return 0
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
    return 0


def abort(args: argparse.Namespace) -> int:
    from ..db.tasks import Tasks
    from ..home import holder
    from ..teams.control import abort_task

    with opened(args) as (home, store):
        task = Tasks(store).find(args.id)
        if task.finished:
            raise LookupFailed(f"task {task.id} has already finished ({task.status})")
        now = abort_task(store, task, loop_may_run=holder(home.lock_file) is not None)
    if now:
        print(f"Task {task.id} aborted; the entry agent hears it when its turn goes on.")
    else:
        print(f"Task {task.id} will stop after the model call in flight returns.")
    return 0


def _short(text: str, limit: int = 60) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
