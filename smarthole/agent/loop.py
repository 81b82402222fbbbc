"""The tool loop: call the model, run the tools it asks for, until it answers.

Each step is stored through the turn's session before the next begins, so a crash resumes
from the last stored step and never runs a finished tool again.
"""

from __future__ import annotations

import logging
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ModelError, TurnHalted
from .budget import CapReached
from .client import IN_DOUBT, ModelClient, ModelReply
from .messages import Messages, with_breakpoint

if TYPE_CHECKING:
    from ..db.records import StoredMessage
    from ..tools import Tool, ToolContext, ToolResult, ToolSet
    from .budget import CallMeter
    from .cutting import StreamCut

logger = logging.getLogger(__name__)


class TurnSession(Protocol):
    """What the loop needs from the processor: the store's view of one turn."""

    def system(self) -> list[dict[str, Any]]: ...

    def history(self) -> Messages: ...

    def turn_messages(self) -> list[StoredMessage]: ...

    def started_tools(self) -> dict[str, int]: ...

    def record_assistant(self, reply: ModelReply) -> None: ...

    def approval(self, block: dict[str, Any], tool: Tool) -> ToolResult | None:
        """None: the call may run; else the result to record instead (a denial). Raises
        ``ApprovalWaiting`` when the call waits for a person (see ``agent.approvals``)."""

    def outcome_unknown(self, block: dict[str, Any], tool: Tool, runs: int) -> ToolResult | None:
        """A started non-idempotent call, cut short: the result to record (its outcome is
        unknown), or None when the person said to run it again."""

    def record_tool_start(self, block: dict[str, Any]) -> None: ...

    def record_tool_result(self, block: dict[str, Any], result: ToolResult) -> None: ...

    def tool_context(self, block: dict[str, Any]) -> ToolContext: ...

    def check_stop(self) -> None: ...

    def steer(self) -> None:
        """At a tool-call boundary, before the next model call: the person's messages that
        came meanwhile join the turn (a ``steer`` channel); a team agent's session: nothing."""

    def trim_history(self) -> bool: ...

    def meter(self) -> CallMeter | None:
        """What reserves each model call's cost before it is sent (``agent.budget``)."""

    def stream_cut(self) -> StreamCut | None:
        """What hangs up the model call in flight when the turn is halted (``/stop``)."""


@dataclass(frozen=True)
class TurnOutcome:
    """How a turn ended: the reply's text, and a note when the loop cut it short."""

    text: str
    note: str | None = None


@dataclass(eq=False)
class Agent:
    """Runs turns: model call, tools, model call... until a reply without tool calls."""

    client: ModelClient
    tools: ToolSet
    _: KW_ONLY
    max_tool_iterations: int

    def run(
        self, session: TurnSession, *, tools: ToolSet | None = None, model: str | None = None
    ) -> TurnOutcome:
        """Run one turn to its reply, with ``tools`` and ``model`` instead of the defaults."""
        tools = self.tools if tools is None else tools
        trimmed = False
        while True:
            session.check_stop()
            messages = session.turn_messages()
            last = messages[-1]
            if last.kind == "assistant":
                missing = _unanswered(last, messages)
                if missing:
                    for block in missing:
                        session.check_stop()
                        self._run_tool(session, block, tools)
                    continue
                if not last.tool_uses:
                    return TurnOutcome(text=last.text.strip())
            rounds = sum(1 for m in messages if m.kind == "assistant" and m.tool_uses)
            if rounds >= self.max_tool_iterations:
                return self._capped(messages)
            meter, system, specs = session.meter(), session.system(), tools.specs()
            if meter is not None:
                meter.prepare(system, specs)
            if last.kind == "tool_result":
                session.steer()
            try:
                reply = self.client.complete(
                    system=system,
                    messages=with_breakpoint(session.history()),
                    tools=specs,
                    model=model,
                    before_send=None if meter is None else meter.reserve,
                    cut=session.stream_cut(),
                )
            except TurnHalted:  # hung up mid-stream: what it streamed is not kept
                if meter is not None:
                    meter.cut()
                raise
            except CapReached as reached:  # held by a cap the person did not raise
                return TurnOutcome(text=reached.reply, note=reached.note)
            except ModelError as exc:
                if meter is not None:
                    meter.failed(exc)
                if exc.prompt_too_long and not trimmed and session.trim_history():
                    logger.warning("prompt too long; retrying once with older history trimmed")
                    trimmed = True
                    continue
                raise
            session.record_assistant(_complete_blocks(reply))

    def _run_tool(self, session: TurnSession, block: dict[str, Any], tools: ToolSet) -> None:
        from ..tools import ToolResult

        tool: Tool | None = tools.get(block["name"])
        # A started tool that is gone now (an MCP server not back yet) may have acted: its
        # outcome is as unknown as a non-idempotent one's.
        runs = session.started_tools().get(block["id"])
        if runs is not None and (tool is None or not tool.idempotent):
            # Its outcome is unknown: the model is told so, unless the person was asked
            # (``[approvals] ask_on_unknown``) and said to run it again.
            unknown = (
                ToolResult(IN_DOUBT, is_error=True)
                if tool is None
                else session.outcome_unknown(block, tool, runs)
            )
            if unknown is not None:
                logger.warning(
                    "tool %s (%s) was interrupted by a stop; reporting an unknown "
                    "outcome instead of running it again",
                    block["name"],
                    block["id"],
                )
                session.record_tool_result(block, unknown)
                return
            logger.warning(
                "tool %s (%s): run again, as the person said", block["name"], block["id"]
            )
        if tool is None:
            session.record_tool_result(
                block, ToolResult(f"Error: unknown tool {block['name']!r}", is_error=True)
            )
            return
        refused = session.approval(block, tool)
        if refused is not None:
            session.record_tool_result(block, refused)
            return
        session.record_tool_start(block)
        result = tool.call(block.get("input", {}), session.tool_context(block))
        session.record_tool_result(block, result)

    def _capped(self, messages: list[StoredMessage]) -> TurnOutcome:
        said = next((m.text for m in reversed(messages) if m.kind == "assistant" and m.text), "")
        note = f"stopped after {self.max_tool_iterations} tool rounds (max_tool_iterations)"
        text = (said + "\n\n" if said else "") + (
            f"(I stopped after {self.max_tool_iterations} rounds of tool use without finishing.)"
        )
        return TurnOutcome(text=text.strip(), note=note)


def _unanswered(assistant: StoredMessage, messages: list[StoredMessage]) -> list[dict[str, Any]]:
    """The tool_use blocks of the last assistant message that have no stored result yet."""
    answered = {m.tool_use_id for m in messages if m.kind == "tool_result"}
    return [b for b in assistant.tool_uses if b["id"] not in answered]


def _complete_blocks(reply: ModelReply) -> ModelReply:
    """Drop tool calls from a reply that was cut off: their input may be incomplete."""
    if reply.stop_reason == "tool_use":
        return reply
    if any(b.get("type") == "tool_use" for b in reply.content):
        logger.warning("reply stopped with %s; ignoring its tool calls", reply.stop_reason)
        content = [b for b in reply.content if b.get("type") != "tool_use"]
        return ModelReply(
            content=content or [{"type": "text", "text": ""}],
            stop_reason=reply.stop_reason,
            usage=reply.usage,
            model=reply.model,
        )
    return reply
