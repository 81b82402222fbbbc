"""The work of ``approvals``, ``approve`` and ``deny``: list what waits, write an answer file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..db.approvals import Approval
from ..db.records import unique_match
from ..errors import UsageError
from ..formats import iso, new_id
from .output import one_line, print_json, short

if TYPE_CHECKING:
    from ..db.approvals import Approvals
    from ..home import Home


def print_waiting(approvals: Approvals, *, as_json: bool) -> None:
    waiting = approvals.waiting()
    if as_json:
        print_json([approval.as_dict() for approval in waiting])
        return
    if not waiting:
        print("no tool call waits for approval")
        return
    for approval in waiting:
        who = "" if approval.task_id is None else f" by {approval.agent}"
        print(
            f"{approval.id}  {one_line(approval.tool)}{one_line(who)}  "
            f"channel {one_line(approval.channel)}  "
            f"conversation {approval.conversation_id[:8]}  expires {iso(approval.expires_at)}"
        )
        print(f"    {short(approval.input, 100)}")


def answer(
    home: Home,
    approvals: Approvals,
    wanted: str,
    decision: str,
    *,
    always: bool = False,
    reason: str = "",
) -> str:
    """Write the inbox file that answers approval ``wanted``; returns what to print."""
    from ..pipeline.inbox import drop_message

    approval = _resolve(approvals, wanted)
    if not approval.waiting:
        raise UsageError(
            f"approval {approval.id} was already decided: {approval.status.value} "
            f"(by {approval.decided_by})"
        )
    path = drop_message(
        home.inbox,
        reason if decision == "deny" else "",
        message_id=f"{decision}-{approval.id}-{new_id()[:8]}",
        metadata={"by": "cli"},
        args_hash=approval.args_hash,
        always=always,
        **{decision: approval.id},
    )
    verb = "approval" if decision == "approve" else "denial"
    return f"{approval.id}: {verb} of {one_line(approval.tool)} sent ({path.name})"


def _resolve(approvals: Approvals, wanted: str) -> Approval:
    return unique_match(
        wanted, approvals.get(wanted), approvals.with_prefix(wanted), "approval", lambda a: a.id
    )
