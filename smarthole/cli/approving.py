"""The work of ``approvals``, ``approve`` and ``deny``: list what waits, write an answer file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..db.approvals import Approval
from ..db.records import unique_match
from ..errors import UsageError
from ..formats import new_id
from .output import clock, one_line, print_json, short

if TYPE_CHECKING:
    from ..db.approvals import Approvals
    from ..home import Home

CHAT_HINT = (
    "(answer with /approve, /approve always, or /deny [reason]; "
    "anything else is sent as your answer instead)"
)


@dataclass(frozen=True)
class ChatAnswer:
    """An answer typed at the chat prompt: ``/approve [always]`` or ``/deny [reason]``."""

    decision: str  # "approve" or "deny", as :func:`answer` takes it
    always: bool = False
    reason: str = ""

    def done(self, approval_id: str, tool: str) -> str:
        """The one line the chat prints once the answer is sent."""
        verb = "approved" if self.decision == "approve" else "denied"
        rest = " for the rest of this conversation" if self.always else ""
        return f"{verb} {one_line(approval_id)} ({one_line(tool)}){rest}"


def chat_answer(text: str) -> ChatAnswer | None:
    """The answer ``text`` (a stripped line typed in a chat) gives; None for anything else."""
    word, _, rest = text.partition(" ")
    rest = rest.strip()
    if word == "/approve":
        if rest not in ("", "always"):
            raise UsageError("say /approve or /approve always (nothing was sent)")
        return ChatAnswer("approve", always=rest == "always")
    if word == "/deny":
        return ChatAnswer("deny", reason=rest)
    return None


def names_approval(text: str) -> bool:
    """Whether ``text`` is ``/approve [always] ID`` or ``/deny ID [reason]``: the daemon's
    message command, which a chat sends when no approval waits in it."""
    words = text.split()
    if not words or words[0] not in ("/approve", "/deny"):
        return False
    rest = words[1:]
    if words[0] == "/approve" and rest[:1] == ["always"]:
        rest = rest[1:]
    return bool(rest)


def print_waiting(approvals: Approvals, *, as_json: bool, now: datetime) -> None:
    waiting = approvals.waiting()
    if as_json:
        print_json([approval.as_dict() for approval in waiting])
        return
    if not waiting:
        print("no tool call waits for approval")
        return
    rows: list[tuple[str, ...]] = [("ID", "TOOL", "CONVERSATION", "CHANNEL", "EXPIRES", "INPUT")]
    for approval in waiting:
        who = "" if approval.task_id is None else f" ({approval.agent})"
        rows.append(
            (
                approval.id,
                one_line(approval.tool) + one_line(who),
                approval.conversation_id[:8],
                short(approval.channel, 16),
                clock(approval.expires_at, now),
                short(arguments(approval.input), 60),
            )
        )
    print(table(rows))


def arguments(value: object) -> str:
    """A tool call's input as ``key=value`` words (a value with spaces quoted)."""
    if not isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    words = []
    for key, item in value.items():
        shown = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
        words.append(f"{key}={json.dumps(shown) if (' ' in shown or not shown) else shown}")
    return " ".join(words)


def table(rows: list[tuple[str, ...]]) -> str:
    """Rows as aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


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
    from ..db.states import ApprovalBy
    from ..pipeline.answers import signed_by
    from ..pipeline.inbox import drop_message

    approval = _resolve(approvals, wanted)
    if not approval.waiting:
        raise UsageError(
            f"approval {approval.id} was already decided: {approval.status.value} "
            f"(by {approval.decided_by})"
        )
    message_id = f"{decision}-{approval.id}-{new_id()[:8]}"
    path = drop_message(
        home.inbox,
        reason if decision == "deny" else "",
        message_id=message_id,
        metadata=signed_by(home, message_id, ApprovalBy.CLI),
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
