"""The approval gate: before a tool runs, does it need a person's yes, and did it get one?

The policy: a ``before_tool_call`` plugin answers first (``"allow"``, ``"ask"``, ``Deny``);
else a call needs approval when its tool was registered ``requires_approval=True``, or its
name matches a pattern of ``[approvals] tools`` (or of the team agent's ``approve``), unless
the person approved that tool for the rest of the conversation (``always``).

A call that needs approval is stored (``db.approvals``) before anything else, then the turn
stops with ``ApprovalWaiting``; the processor makes the message wait and writes the approval
item. When the turn runs again (an answer made it due, or its ``expires`` came) the gate finds
the stored approval for the same call and says what the loop does: run it (approved), or
record the tool error the model reads (denied, expired, answered with a plain message).
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..db.approvals import Approval, Approvals
from ..db.states import ApprovalBy, ApprovalState
from ..errors import ApprovalWaiting
from ..formats import args_hash, new_id
from ..hookspecs import Deny, ToolCall
from ..tools import ToolResult
from .client import IN_DOUBT

if TYPE_CHECKING:
    from ..app import App
    from ..db.events import EventLog
    from ..tools import Tool

logger = logging.getLogger(__name__)

DENIED = "denied by the person"
OUTCOME_UNKNOWN = "outcome_unknown"


@dataclass(frozen=True)
class CallPlace:
    """Where the calls of one agent turn happen, as the gate stores and reports them."""

    scope: str  # the conversation's id, or the team task's: tool-use ids are unique within it
    conversation_id: str
    channel: str
    turn: int
    message_id: str
    agent: str
    task_id: str | None = None
    patterns: tuple[str, ...] = ()  # a team agent's own ``approve`` patterns

    @property
    def where(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation_id,
            "channel": self.channel,
            "turn": self.turn,
            "message_id": self.message_id,
        }


@dataclass(eq=False)
class ApprovalGate:
    """Decides, for each tool call of one agent turn, whether it runs now."""

    app: App
    events: EventLog | None
    place: CallPlace

    def __post_init__(self) -> None:
        self.approvals = Approvals(self.app.store)
        self.notes: dict[str, str] = {}  # the person's note with an approval, by tool-use id

    def check(self, block: dict[str, Any], tool: Tool) -> ToolResult | None:
        """None: run the call. A result: record it instead of running. ``ApprovalWaiting``:
        the call waits for a person (stored before this raises)."""
        keyed = {**block, "id": self._key(block)}
        found = self.approvals.for_call(self.place.scope, keyed["id"])
        if found is not None:
            return self.settled(found, call_id=block["id"])
        verdict = self._policy(block, tool)
        if verdict == "allow":
            return None
        if isinstance(verdict, Deny):
            return _error(f"denied: {verdict.reason}")
        return self.settled(self.ask(keyed), call_id=block["id"])

    def _key(self, block: dict[str, Any]) -> str:
        """The id this call's approval is stored under: its tool-use id, unless an approval of
        another call holds that id (another turn, or other arguments: a proxy or another
        model may repeat ids). An approval decides the one call it was asked about."""
        found = self.approvals.for_call(self.place.scope, block["id"])
        call_hash = args_hash(block["name"], block.get("input", {}))
        if found is None or (found.turn, found.args_hash) == (self.place.turn, call_hash):
            return str(block["id"])
        return f"{block['id']}@{self.place.turn}:{call_hash[:16]}"

    def outcome_unknown(self, block: dict[str, Any], runs: int) -> ToolResult | None:
        """A started call cut short by a crash: "outcome unknown" for the model, or, with
        ``[approvals] ask_on_unknown``, the person's answer (None: run it again). Each run
        that a crash cuts short is asked about anew."""
        if not self.app.config.approvals.ask_on_unknown:
            return ToolResult(IN_DOUBT, is_error=True)
        question = {**block, "id": f"{block['id']}#unknown{runs}"}
        found = self.approvals.for_call(self.place.scope, question["id"])
        return self.settled(found or self.ask(question, question=OUTCOME_UNKNOWN))

    def ask(self, block: dict[str, Any], *, question: str | None = None) -> Approval:
        """Store the waiting approval of this call (with its event); the stored one if any."""
        now = self.app.now()
        timeout = self.app.config.approvals.timeout_seconds
        arguments = block.get("input", {})
        place = self.place
        wanted = Approval(
            id=new_id()[:12],
            scope=place.scope,
            tool_use_id=block["id"],
            conversation_id=place.conversation_id,
            channel=place.channel,
            turn=place.turn,
            message_id=place.message_id,
            task_id=place.task_id,
            agent=place.agent,
            tool=block["name"],
            input=arguments,
            args_hash=args_hash(block["name"], arguments),
            question=question,
            status=ApprovalState.WAITING,
            always=False,
            note=None,
            decided_by=None,
            answer_id=None,
            created_at=now,
            expires_at=now + timedelta(seconds=timeout),
            decided_at=None,
        )
        with self.app.store.transaction() as db:
            approval = self.approvals.create(wanted, db=db)
            if approval.id == wanted.id and self.events is not None:
                self.events.emit(
                    "approval_requested",
                    **place.where,
                    db=db,
                    approval=approval.id,
                    tool=approval.tool,
                    args_hash=approval.args_hash,
                    expires=approval.as_dict()["expires"],
                    agent=place.agent,
                    task=place.task_id,
                    question=question,
                )
        return approval

    def settled(self, approval: Approval, *, call_id: str | None = None) -> ToolResult | None:
        """What a stored approval means for its call now (see :meth:`check`); ``call_id`` is
        the call's tool-use id where the approval is stored under another key."""
        if approval.waiting:
            if approval.expires_at > self.app.now():
                raise ApprovalWaiting(approval.id, approval.expires_at)
            approval = self._expire(approval)
        status, note = approval.status, approval.note
        unknown = approval.question == OUTCOME_UNKNOWN
        if status is ApprovalState.APPROVED:
            if note:
                self.notes[call_id or approval.tool_use_id] = note
            return None
        if status is ApprovalState.DENIED:
            if unknown:
                return _error("the person says this call did not take effect" + _reason(note))
            return _error(DENIED + _reason(note))
        if status is ApprovalState.EXPIRED:
            if unknown:
                return ToolResult(IN_DOUBT, is_error=True)
            return _error(f"no answer within {self.app.config.approvals.timeout}")
        if unknown:
            return ToolResult(f"{IN_DOUBT} The person says: {note or ''}", is_error=True)
        return _error(f"the person answered instead of approving this call: {note or ''}")

    def annotate(self, block: dict[str, Any], result: ToolResult) -> ToolResult:
        """``result`` with the note the person gave with their approval, if any."""
        note = self.notes.pop(block["id"], None)
        if note is None:
            return result
        added = f"(The person approved this call with a note: {note})"
        if result.blocks:
            blocks = (*result.blocks, {"type": "text", "text": added})
            return replace(result, blocks=blocks)
        return replace(result, text=f"{result.text}\n\n{added}")

    def _expire(self, approval: Approval) -> Approval:
        now = self.app.now()
        with self.app.store.transaction() as db:
            if (
                self.approvals.decide(
                    approval.id, ApprovalState.EXPIRED, by=ApprovalBy.TIMEOUT, at=now, db=db
                )
                and self.events is not None
            ):
                self.events.emit(
                    "approval_decided",
                    **self.place.where,
                    db=db,
                    approval=approval.id,
                    tool=approval.tool,
                    decision=ApprovalState.EXPIRED.value,
                    by=ApprovalBy.TIMEOUT.value,
                )
            current = self.approvals.get(approval.id, db=db)
        return current or replace(approval, status=ApprovalState.EXPIRED)

    def _policy(self, block: dict[str, Any], tool: Tool) -> str | Deny:
        """``"allow"``, ``"ask"`` or a ``Deny``: the plugins' answer, else the configuration's."""
        place = self.place
        call = ToolCall(
            tool=block["name"],
            input=block.get("input", {}),
            conversation=place.conversation_id,
            channel=place.channel,
            agent=place.agent,
            tool_use_id=block["id"],
            task=place.task_id,
        )
        answer = self.app.plugins.first("before_tool_call", call=call, app=self.app)
        if answer is not None:
            if answer in ("allow", "ask") or isinstance(answer, Deny):
                return answer
            logger.error(
                "before_tool_call answered %r for %s; refusing the call", answer, call.tool
            )
            return Deny(f"a plugin answered {str(answer)[:60]!r}")
        patterns = (*self.app.config.approvals.tools, *place.patterns)
        if not tool.requires_approval and not any(
            fnmatch.fnmatchcase(call.tool, p) for p in patterns
        ):
            return "allow"
        if self.approvals.always_approved(place.conversation_id, call.tool):
            return "allow"
        return "ask"


def _reason(note: str | None) -> str:
    return f": {note}" if note and note.strip() else ""


def _error(text: str) -> ToolResult:
    return ToolResult(f"Error: {text}", is_error=True)
