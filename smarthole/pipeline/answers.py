"""A person's answer to an approval, and the approval item that asks for it.

The answer transition belongs to the message lifecycle (see ``lifecycle``): one commit
stores the decision (who, when, the answer file's id, the person's text) and makes the waiting
message due now, with the ``approval_decided`` event. The turn then resumes on a worker like
any due message, and the agent loop runs the call once, or records the tool error the model
reads. Whatever says it (an inbox file, ``smarthole approve``, the web view's buttons), an
answer comes through the inbox, so it is as durable as any message: claimed, applied, and only
then removed; an answer that a crash made come again is recognised by its id and does nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent.budget import BUDGET
from ..agent.budget import approval_text as budget_approval_text
from ..db.approvals import Approval
from ..db.states import ApprovalBy, ApprovalState, OutboxKind
from ..formats import iso
from ..fsutil import atomic_write, fsync_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..db.approvals import Approvals
    from ..db.events import EventLog
    from ..db.ledger import Ledger
    from ..db.records import Message
    from ..db.store import Store
    from ..home import Home
    from .outbox import Outbox

logger = logging.getLogger(__name__)

MAX_NOTE_CHARS = 4000
DECISIONS = {"approve": ApprovalState.APPROVED, "deny": ApprovalState.DENIED}
BY = {by.value for by in (ApprovalBy.CLI, ApprovalBy.WEB)}
PROOF_KEY = "answers.key"  # in .smarthole/, 0600: what only the home's owner can read


def signed_by(home: Home, message_id: str, by: ApprovalBy) -> dict[str, str]:
    """The metadata of an answer file the CLI or the web view writes: who it comes from, and
    the proof of it. Anyone who can write into the inbox can write ``by = "web"``; only the
    home's owner can read the key the proof is made with."""
    key = _key(home, create=True)
    assert key is not None  # made if missing
    return {"by": by.value, "proof": _proof(key, message_id, by.value)}


def arrived_by(home: Home, message: Message) -> str:
    """How an answer file really arrived: the CLI or the web view when it carries their
    proof, else an inbox file (whatever its ``by`` claims)."""
    by, proof = message.metadata.get("by"), message.metadata.get("proof")
    key = _key(home, create=False)
    proven = (
        by in BY
        and isinstance(proof, str)
        and key is not None
        and hmac.compare_digest(proof, _proof(key, message.id, str(by)))
    )
    return str(by) if proven else ApprovalBy.INBOX.value


def _proof(key: bytes, message_id: str, by: str) -> str:
    return hmac.new(key, f"{message_id}\0{by}".encode(), hashlib.sha256).hexdigest()


def _key(home: Home, *, create: bool) -> bytes | None:
    path = home.state / PROOF_KEY
    with contextlib.suppress(FileNotFoundError):
        return path.read_bytes()
    if not create:
        return None
    with contextlib.suppress(FileExistsError):  # another writer made it first: theirs holds
        atomic_write(path, secrets.token_bytes(32), exclusive=True)
    return path.read_bytes()


def _item_id(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:16]


def approval_item(approval: Approval) -> dict[str, Any]:
    """The outbox item that asks the person about ``approval`` (``Outbox.send``'s fields)."""
    shown = json.dumps(approval.input, indent=2, ensure_ascii=False, sort_keys=True)
    if approval.question == "outcome_unknown":
        lead = (
            f"A crash cut **{approval.tool}** short, and whether it took effect is unknown. "
            "Approve to run it again; deny to treat it as not done."
        )
    else:
        who = "" if approval.task_id is None else f" (team agent {approval.agent})"
        lead = f"The agent{who} asks before running **{approval.tool}**:"
    text = (
        f"{lead}\n\n```json\n{shown}\n```\n\n"
        f'To answer, drop a file in the inbox with front matter `approve = "{approval.id}"` '
        f"(add `always = true` to allow {approval.tool} for the rest of this conversation) or "
        f'`deny = "{approval.id}"`; its text, if any, goes to the agent. Or run '
        f"`smarthole approve {approval.id}` or `smarthole deny {approval.id} --reason TEXT`. "
        f"A message of your own instead is passed to the agent in place of an answer. "
        f"No answer by {iso(approval.expires_at)}: the call is denied."
    )
    extra = {
        "approval": approval.id,
        "tool": approval.tool,
        "args_hash": approval.args_hash,
        "expires": iso(approval.expires_at),
        "question": approval.question,
    }
    if approval.question == BUDGET:  # a cap holds a model call (``agent.budget``)
        text, more = budget_approval_text(approval)
        extra.update(more)
    return {
        "item_id": _item_id("approval", approval.id),
        "in_reply_to": approval.message_id,
        "conversation": approval.conversation_id,
        "channel": approval.channel,
        "turn": approval.turn,
        "kind": OutboxKind.APPROVAL,
        "text": text,
        "waiting_for_reply": True,
        "extra": {k: v for k, v in extra.items() if v is not None},
    }


@dataclass(frozen=True)
class Decided:
    """What applying an answer came to: the approval, or the error the person is told."""

    approval: Approval | None
    error: str | None = None


@dataclass(eq=False)
class Answers:
    """Applies answers to approvals, each in one commit."""

    home: Home
    store: Store
    ledger: Ledger
    events: EventLog
    outbox: Outbox
    approvals: Approvals
    is_command: Callable[[str], bool] | None = None  # a command is never an answer

    def take(self, claimed: Path, message: Message, channel: str) -> bool:
        """Whether a claimed inbox file answers an approval (then it is applied, and its file
        removed): an ``approve``/``deny`` file always; a plain message when a call of its
        channel waits (its text goes to the model instead of an answer)."""
        if message.answer is not None:
            self.apply_file(claimed, message)
            return True
        if message.agents is not None or message.new_conversation:
            return False
        if self.is_command is not None and self.is_command(message.text):
            return False
        if self.approvals.by_answer(message.id) is not None:
            _remove(claimed)  # it answered before a crash: this is the same file again
            return True
        for approval in self.approvals.waiting(channel=channel):
            if message.conversation and not approval.conversation_id.startswith(
                message.conversation
            ):
                continue
            decided = self.decide(
                approval.id,
                ApprovalState.ANSWERED,
                by=ApprovalBy.INBOX.value,
                note=message.text,
                answer_id=message.id,
            )
            if decided.error is None:
                _remove(claimed)
                return True
        return False

    def apply_file(self, claimed: Path, message: Message) -> Decided:
        """A claimed inbox file that answers an approval: applied, then its file removed; an
        answer that cannot apply gets an ``error`` reply saying why. Nothing here runs a tool."""
        answer = message.answer
        assert answer is not None
        decided = self.decide(
            answer.approval,
            DECISIONS[answer.decision],
            by=arrived_by(self.home, message),
            note=message.text,
            always=answer.always,
            args_hash=answer.args_hash,
            answer_id=message.id,
        )
        if decided.error is not None:
            logger.warning("answer %s not applied: %s", message.id, decided.error)
            approval = decided.approval
            self.outbox.send(
                item_id=_item_id("answer-error", message.id),
                in_reply_to=message.id,
                conversation=approval.conversation_id if approval else message.conversation,
                channel=approval.channel if approval else (message.channel or "default"),
                turn=None,
                kind=OutboxKind.ERROR,
                text=decided.error,
            )
        _remove(claimed)
        return decided

    def decide(
        self,
        approval_id: str,
        status: ApprovalState,
        *,
        by: str,
        note: str | None = None,
        always: bool = False,
        args_hash: str | None = None,
        answer_id: str | None = None,
    ) -> Decided:
        """Decide a waiting approval and make its message due, in one commit."""
        note = (note or "").strip()[:MAX_NOTE_CHARS] or None
        with self.store.transaction() as db:
            approval = self.approvals.get(approval_id, db=db)
            if approval is None:
                return Decided(None, f"no approval has the id {approval_id!r}")
            if args_hash is not None and args_hash != approval.args_hash:
                return Decided(
                    approval,
                    f"approval {approval_id}: args_hash does not match the call "
                    f"(expected {approval.args_hash}); nothing was run",
                )
            if approval.waiting and approval.expires_at <= self.store.clock():
                approval = self._expire(approval, db)  # late: the expiry decided first
            if not approval.waiting:
                if answer_id is not None and approval.answer_id == answer_id:
                    return Decided(approval)  # this very answer, again after a crash
                return Decided(
                    approval,
                    f"approval {approval_id} was already decided: {approval.status.value} "
                    f"(by {approval.decided_by}); this answer changes nothing",
                )
            decided = self._record(
                approval, status, by, db, note=note, always=always, answer_id=answer_id
            )
        logger.info("approval %s: %s by %s", approval_id, status.value, by)
        return Decided(decided)

    def _expire(self, approval: Approval, db: Any) -> Approval:
        """Expire ``approval``, whose time passed before any answer was applied (the daemon
        was down, or the answer came between the expiry and the wake-up), in ``db``'s
        transaction."""
        return self._record(approval, ApprovalState.EXPIRED, ApprovalBy.TIMEOUT.value, db)

    def _record(
        self, approval: Approval, status: ApprovalState, by: str, db: Any, **answer: Any
    ) -> Approval:
        """Store the decision, make the waiting message due, and say so: in ``db``'s
        transaction. ``answer``: the person's ``note``, ``always`` and ``answer_id``."""
        self.approvals.decide(approval.id, status, by=by, at=self.store.clock(), db=db, **answer)
        self.ledger.wake(approval.message_id, db=db)
        self.events.emit(
            "approval_decided",
            conversation=approval.conversation_id,
            channel=approval.channel,
            turn=approval.turn,
            message_id=approval.message_id,
            db=db,
            approval=approval.id,
            tool=approval.tool,
            decision=status.value,
            by=by,
            always=bool(answer.get("always", False)),
        )
        decided = self.approvals.get(approval.id, db=db)
        assert decided is not None
        return decided


def _remove(claimed: Path) -> None:
    """An applied answer's claimed file: gone for good (its decision is committed)."""
    with contextlib.suppress(FileNotFoundError):
        claimed.unlink()
        fsync_dir(claimed.parent)
