"""Agent teams for people: the agents, and the tasks with their turns, as ``smarthole agents``
and ``tasks`` (list, show, abort) print them (``cli.commands.teams`` declares the commands)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ..errors import LookupFailed
from .common import daemon_pid
from .output import one_line, print_json, short

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from ..db.tasks import Tasks
    from ..home import Home


def print_agents(home: Home, *, as_json: bool) -> None:
    """The entry agent first, then each team agent with its description, model and tools;
    with a daemon running, the agents it has loaded, each difference on disk named with where
    it comes from (config.toml, or a tool's plugin and its file)."""
    from ..daemon.loaded import agent_differences, agent_listing, beside_disk
    from ..daemon.state import recorded
    from .render import loaded_footer

    explain = agent_differences(recorded(home, "plugins"))
    listing = beside_disk(home, recorded(home, "agents"), agent_listing, explain)
    if listing.disk_error:
        print(f"smarthole: {listing.disk_error} (the next start would fail)", file=sys.stderr)
    if as_json:
        print_json(listing.entries)
        return
    if listing.from_daemon:
        print("As loaded by the running daemon:")
    for entry in listing.entries:
        role = " (entry agent)" if entry["role"] == "entry" else ""
        mark, differs = _differences(entry)
        print(f"{one_line(entry['name'])}{role}: {short(entry['description'], 200)}{mark}")
        print(f"  model: {one_line(entry['model'])}")
        print(f"  tools: {', '.join(one_line(t) for t in entry['tools']) or 'none'}")
        for line in differs:
            print(f"  {line}")
    if not any(entry["role"] == "team" for entry in listing.entries):
        print("No team agents: add [agents.<name>] tables to config.toml (see the README).")
    for line in loaded_footer(listing.entries):
        print(line)


def _differences(entry: dict[str, Any]) -> tuple[str, list[str]]:
    """The mark of an agent whose disk differs from the running daemon's, naming where it
    changed, and one line per difference (``differs``, from
    :func:`smarthole.daemon.loaded.agent_differences`)."""
    differs = entry.get("differs") or []
    if not differs:
        from .render import loaded_mark

        return loaded_mark(entry, "in config.toml"), []
    places = sorted(
        {"config.toml" if d["from"].startswith("config.toml") else "plugins" for d in differs}
    )
    lines = []
    for item in differs:
        where = one_line(item["from"])
        if item["what"] != "tool":
            lines.append(f"{item['what']} in {where}: now {short(str(item['on_disk']), 200)!r}")
        elif item["on_disk"]:
            lines.append(f"tool {one_line(item['name'])}, from {where}: not loaded by the daemon")
        else:
            lines.append(
                f"tool {one_line(item['name'])}, from {where}: loaded by the daemon, "
                "no longer on disk"
            )
    mark = f"  (changed in {' and '.join(places)} since the running daemon loaded it)"
    return mark, lines


def print_tasks(table: Tasks, *, everything: bool, as_json: bool) -> None:
    """Running tasks and the last ten (``everything``: all of them), one line each."""
    from ..teams.control import describe

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


def print_task(table: Tasks, wanted: str, *, as_json: bool) -> None:
    """Task ``wanted`` (an id or a unique prefix) and each of its agent turns."""
    from ..teams.control import describe

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


def abort(root: Runtime, wanted: str) -> str:
    """Stop task ``wanted`` after the model call in flight; returns what to tell the person."""
    from ..teams.control import abort_task

    task = root.tasks.find(wanted)
    if task.finished:
        raise LookupFailed(f"task {task.id} has already finished ({task.status})")
    running = daemon_pid(root.home) is not None
    if abort_task(root.store, root.events, root.tasks, task, loop_may_run=running):
        return f"Task {task.id} aborted; the entry agent hears it when its turn goes on."
    return f"Task {task.id} will stop after the model call in flight returns."
