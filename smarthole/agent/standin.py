"""Recorded tool results standing in for tool calls, in a replay: nothing runs twice.

A replayed turn's tool call whose tool name and canonical arguments (the approvals' args hash,
``formats.args_hash``) match a call the original made in the same turn gets the original's
recorded result, without running. The n-th such call gets the n-th recorded result (the last
one when the replay asks more often than the original did). Any other call gets the tool error
:data:`REFUSED`; with ``live_tools``, a read-only tool runs for real instead (through the
approval gate, like any call), and a tool with side effects never does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..formats import args_hash
from ..tools import Tool, ToolResult, ToolSet

if TYPE_CHECKING:
    from ..db.records import StoredMessage

REFUSED = "not run during a replay (no recorded result for these arguments)"
"""The tool error a replayed call gets when the original made no call like it."""


def call_key(block: dict[str, Any]) -> tuple[str, str]:
    """A tool_use block's tool and the hash of its canonical arguments."""
    name = str(block.get("name", ""))
    return name, args_hash(name, block.get("input", {}))


def recorded_result(block: dict[str, Any]) -> ToolResult:
    """The :class:`ToolResult` a stored ``tool_result`` block holds, as it was recorded."""
    content = block.get("content", "")
    is_error = bool(block.get("is_error", False))
    if isinstance(content, list):
        text = "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
        return ToolResult(text, is_error=is_error, blocks=tuple(content))
    return ToolResult(str(content), is_error=is_error)


@dataclass(frozen=True)
class RecordedCalls:
    """The tool calls one turn of the original made, and their results, by call key."""

    results: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def of_turn(cls, messages: list[StoredMessage]) -> RecordedCalls:
        """From the stored messages of one original turn."""
        answers = {m.tool_use_id: m.content[0] for m in messages if m.kind == "tool_result"}
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for message in messages:
            if message.kind != "assistant":
                continue
            for block in message.tool_uses:
                answer = answers.get(block.get("id"))
                if answer is not None:
                    results.setdefault(call_key(block), []).append(answer)
        return cls(results)

    def names(self) -> set[str]:
        return {name for name, _ in self.results}

    def result(self, block: dict[str, Any], earlier: int) -> ToolResult | None:
        """The recorded result for ``block``, asked for ``earlier`` times before in this turn;
        None if the original made no such call."""
        found = self.results.get(call_key(block))
        if not found:
            return None
        return recorded_result(found[min(earlier, len(found) - 1)])


class Gate(Protocol):
    """What :class:`ReplayTools` asks before a live call (``agent.approvals.ApprovalGate``)."""

    def check(self, block: dict[str, Any], tool: Tool) -> ToolResult | None: ...


@dataclass(frozen=True)
class ReplayTools:
    """How one replayed turn answers its tool calls; ``model`` is the model it asks."""

    recorded: RecordedCalls
    live_tools: bool = False
    model: str | None = None

    def tools(self, offered: ToolSet) -> ToolSet:
        """``offered``, where a tool the original called and that is gone now (an MCP server
        not configured any more) is still found, so its recorded results stand in; the model
        is offered the same tools."""
        return _WithRecorded(offered, self.recorded.names() - {t.name for t in offered})

    def check(
        self, block: dict[str, Any], tool: Tool, turn: list[StoredMessage], gate: Gate
    ) -> ToolResult | None:
        """The result to record instead of running (recorded, or refused), or None when the
        call runs for real: a read-only tool with ``live_tools``, that the gate lets run."""
        found = self.recorded.result(block, _asked_before(block, turn))
        if found is not None:
            return found
        if self.live_tools and tool.read_only:
            return gate.check(block, tool)
        return ToolResult(REFUSED, is_error=True)


def _asked_before(block: dict[str, Any], turn: list[StoredMessage]) -> int:
    """How many calls of the turn before ``block`` had its key."""
    key, count = call_key(block), 0
    for message in turn:
        for earlier in message.tool_uses if message.kind == "assistant" else []:
            if earlier.get("id") == block.get("id"):
                return count
            if call_key(earlier) == key:
                count += 1
    return count


class _WithRecorded(ToolSet):
    """A tool set that also finds, by name, tools it does not offer (never run: a stand-in)."""

    def __init__(self, offered: ToolSet, gone: set[str]) -> None:
        super().__init__(offered)
        self._gone = {name: Tool(name=name, description="", plugin="replay") for name in gone}

    def get(self, name: str) -> Tool | None:
        return super().get(name) or self._gone.get(name)
