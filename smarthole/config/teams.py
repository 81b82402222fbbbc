"""Agent teams in ``config.toml``: ``[agents.<name>]`` tables and the ``[teams]`` limits.

Parsing checks each table on its own (names, keys, types, a description). What needs more than
the file — the instruction files on disk and the tools that plugins register — is checked by
:func:`resolve_team` once the plugins are loaded, so every problem is still a ``ConfigError`` at
start that names its key.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..home import Home
from .fields import build_settings, closest, setting

AGENT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
NAME_RULE = "a lowercase letter, then up to 31 lowercase letters, digits, - or _"
# The human-facing tools are the entry agent's alone: a team agent never messages the person,
# ends their conversation, or starts a task of its own.
MCP_SEPARATOR = "__"  # an MCP tool reaches the model as <server>__<tool>
ENTRY_ONLY_TOOLS = frozenset({"send_message", "end_conversation", "start_task", "finish_task"})


@dataclass(frozen=True)
class TeamSettings:
    max_turns: int = setting(6, "Agent turns in a task unless the task says otherwise.", minimum=1)
    max_turns_limit: int = setting(50, "A task asking for more turns is refused.", minimum=1)
    max_agents: int = setting(8, "Most agents taking part in one task.", minimum=1)


@dataclass(frozen=True)
class TeamAgentSettings:
    """One ``[agents.<name>]`` table as written."""

    description: str = setting("", "Required; shown to the entry agent.")
    instructions: str = setting("", "The agent's system prompt.")
    instructions_file: str = setting("", "Or: a file holding it, relative to the home.")
    model: str = setting("", "Model for this agent; empty means [model] name.")
    tools: list[str] = setting([], "Tool names this agent may use; default none.")
    approve: list[str] = setting([], "Glob patterns of its calls that wait for approval.")
    memory: bool = setting(False, "Offer this agent the memory tool too (see docs/memory.md).")


@dataclass(frozen=True)
class TeamAgent:
    """A team agent ready to run: its instructions read, its model and tools settled."""

    name: str
    description: str
    instructions: str
    model: str
    tools: tuple[str, ...] = field(default=())
    approve: tuple[str, ...] = field(default=())  # patterns of its calls that need approval
    memory: bool = False  # offered the memory tool


def parse_agents(table: dict[str, Any], errors: list[str]) -> dict[str, TeamAgentSettings]:
    """The ``[agents]`` table: one sub-table per agent, each checked on its own."""
    agents: dict[str, TeamAgentSettings] = {}
    for name, value in table.items():
        where = f"[agents.{name}]"
        if not AGENT_NAME.fullmatch(name):
            errors.append(f"{where} the name must be {NAME_RULE}")
            continue
        if not isinstance(value, dict):
            errors.append(f"[agents] {name} must be a table")
            continue
        agent = build_settings(TeamAgentSettings, value, where, errors)
        if not agent.description.strip():
            errors.append(f"{where} description is required")
        if agent.instructions and agent.instructions_file:
            errors.append(f"{where} give instructions or instructions_file, not both")
        for tool in agent.tools:
            if tool == "finish_task":  # offered to every team agent: naming it is a mistake
                errors.append(f"{where} tools: 'finish_task' is every team agent's; leave it out")
            elif tool in ENTRY_ONLY_TOOLS:
                errors.append(f"{where} tools: {tool!r} is for the entry agent only")
            if tool == "memory":
                errors.append(f"{where} tools: the memory tool is given by memory = true")
        agents[name] = agent
    return agents


def check_entry_name(entry: str, agents: Collection[str], errors: list[str]) -> None:
    if not AGENT_NAME.fullmatch(entry):
        errors.append(f"[agent] name must be {NAME_RULE} (got {entry!r})")
    if entry in agents:
        errors.append(f"[agents.{entry}] has the entry agent's name ([agent] name)")


def resolve_team(
    agents: dict[str, TeamAgentSettings],
    *,
    home: Home,
    default_model: str,
    tool_names: Collection[str],
    mcp_servers: Collection[str] = (),
) -> dict[str, TeamAgent]:
    """Read instruction files and check tool names; one ``ConfigError`` lists every problem.

    A tool may be a plugin's, or an MCP server's (``files__read_text_file``, or ``files__*``
    for all of them): those are checked against the configured servers only, since a server's
    tools are known once it runs.
    """
    errors: list[str] = []
    team: dict[str, TeamAgent] = {}
    for name, agent in agents.items():
        where = f"[agents.{name}]"
        instructions = agent.instructions
        if agent.instructions_file:
            path = home.root / agent.instructions_file
            try:
                instructions = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                errors.append(f"{where} instructions_file {str(path)!r} cannot be read: {exc}")
        for tool in agent.tools:
            server, separator, rest = tool.partition(MCP_SEPARATOR)
            if tool in tool_names or (separator and rest and server in mcp_servers):
                continue
            errors.append(
                f"{where} tools: no plugin registers a tool named {tool!r}"
                + (f" and there is no MCP server {server!r}" if separator else "")
                + _what_there_is(tool, tool_names, mcp_servers)
            )
        team[name] = TeamAgent(
            name=name,
            description=" ".join(agent.description.split()),
            instructions=instructions.strip(),
            model=agent.model or default_model,
            tools=tuple(agent.tools),
            approve=tuple(agent.approve),
            memory=agent.memory,
        )
    if errors:
        raise ConfigError(f"{home.config_file}: " + "; ".join(errors))
    return team


def _what_there_is(tool: str, tool_names: Collection[str], mcp_servers: Collection[str]) -> str:
    """`` (did you mean 'read_file'? a team agent may use edit_file, ...)``: the valid names,
    which only the loaded plugins and the configured MCP servers know."""
    allowed = sorted(set(tool_names) - ENTRY_ONLY_TOOLS)
    server, separator, rest = tool.partition(MCP_SEPARATOR)
    if separator:
        near = closest(server, mcp_servers)
        close = f"{near}{MCP_SEPARATOR}{rest}" if near else None
    else:
        close = closest(tool, allowed)
    hint = f"did you mean {close!r}? " if close else ""
    offered = (
        f"a team agent may use {', '.join(allowed)}" if allowed else "no plugin tool is loaded"
    )
    if mcp_servers:
        names = sorted(mcp_servers)
        servers = f"server{'s' if len(names) > 1 else ''} {', '.join(names)}"
        offered += f", or <server>{MCP_SEPARATOR}<tool> of the MCP {servers}"
    return f" ({hint}{offered})"
