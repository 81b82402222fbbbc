"""A message command, taken exactly once: its handler and its reply's record in one commit.

The handler runs inside the transaction that plans the command's reply (an outbox row under
the message's fixed final id) and records the ``command_run`` event: what it changes in the
store is kept with that, or, if it raises, not at all (the reply then says what failed). The
reply file is written and delivered after that commit, and the commit after it marks the
message done: a crash in between finds the planned reply and finishes it, never running the
handler again. A command is no turn: the model never sees it, nor its reply.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...db.states import UNFINISHED_MESSAGES, MessageStatus, OutboxKind, OutboxState, Outcome
from ..lifecycle import final_reply_id
from .registry import CommandContext, CommandRegistry, CommandReply, Invocation

if TYPE_CHECKING:
    from ...app import App
    from ...db.events import EventLog
    from ...db.ledger import Ledger, LedgerEntry
    from ...db.outbox import OutboxItem
    from ..inbox import Inbox
    from ..outbox import Outbox

logger = logging.getLogger(__name__)


class _Refused(Exception):
    """A handler's error reply: undo what it changed, and answer with this."""

    def __init__(self, reply: CommandReply) -> None:
        self.reply = reply


@dataclass(eq=False)
class CommandRunner:
    """Recognises the commands messages carry and runs each once."""

    app: App
    registry: CommandRegistry
    ledger: Ledger
    outbox: Outbox
    events: EventLog
    inbox: Inbox
    parts: Any  # what a handler's context reaches (the composition root)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.store = self.app.store

    def invocation(self, entry: LedgerEntry) -> Invocation | None:
        """The command ``entry`` carries, or None (ordinary text, a team task, an answer)."""
        message = entry.message
        if message.agents is not None or message.answer is not None:
            return None
        return self.registry.parse(message.text)

    def run(self, entry: LedgerEntry, invocation: Invocation) -> Outcome:
        """Run the command of ``entry`` (once: again after a crash, it finishes the reply)."""
        with self._lock:  # the channel's worker and the immediate path may both reach it
            current = self.ledger.get(entry.id)
            if current is None or current.status not in UNFINISHED_MESSAGES:
                return Outcome.DONE
            item_id = final_reply_id(entry.id, current.generation)
            found = self.outbox.get(item_id)
            planned = found[0] if found is not None else self._decide(current, invocation, item_id)
            self.outbox.hand_over(item_id=item_id, **_fields(planned))
            self.inbox.remove_claimed(current)
            with self.store.transaction() as db:
                self.outbox.mark(item_id, OutboxState.DELIVERED, db=db)
                self.ledger.set_status(entry.id, MessageStatus.DONE, claimed_path=None, db=db)
        return Outcome.DONE

    def _decide(self, entry: LedgerEntry, invocation: Invocation, item_id: str) -> OutboxItem:
        """Run the handler and plan its reply in one commit; a handler that raises changes
        nothing, and its reply says so."""
        command = invocation.command
        context = CommandContext(command.name, invocation.args, entry, self.app, self.parts)
        try:
            with self.store.transaction() as db:
                reply = _as_reply(command.handler(context))
                if not reply.ok:
                    raise _Refused(reply)
                return self._plan(context, reply, item_id, db)
        except _Refused as refused:
            reply = refused.reply
        except Exception as exc:  # a broken command: its changes undone, the person told
            logger.exception("message command /%s of message %s failed", command.name, entry.id)
            reply = CommandReply(f"/{command.name} failed: {type(exc).__name__}: {exc}", ok=False)
        with self.store.transaction() as db:
            return self._plan(context, reply, item_id, db)

    def _plan(
        self, context: CommandContext, reply: CommandReply, item_id: str, db: Any
    ) -> OutboxItem:
        entry, name = context.entry, context.name
        conversation = reply.conversation
        if conversation is None:
            current = context.current()
            conversation = current.id if current is not None else None
        item = self.outbox.item(
            item_id,
            self.app.now(),
            in_reply_to=entry.id,
            conversation=conversation,
            channel=entry.channel,
            turn=None,
            kind=OutboxKind.COMMAND,
            text=reply.text,
            extra={"command": name, "ok": reply.ok, "next": reply.follow},
        )
        self.outbox.record(item, OutboxState.PLANNED, db=db)
        self.events.emit(
            "command_run",
            conversation=conversation,
            channel=entry.channel,
            message_id=entry.id,
            db=db,
            command=name,
            ok=reply.ok,
            **_queued(reply),
        )
        return item


def _queued(reply: CommandReply) -> dict[str, Any]:
    """The event's ``next``: the message the command queued, when it queued one."""
    return {"next": reply.follow} if reply.follow else {}


def _as_reply(answer: CommandReply | str) -> CommandReply:
    return answer if isinstance(answer, CommandReply) else CommandReply(str(answer))


def _fields(item: OutboxItem) -> dict[str, Any]:
    return {
        "in_reply_to": item.in_reply_to,
        "conversation": item.conversation,
        "channel": item.channel,
        "turn": item.turn,
        "kind": item.kind,
        "text": item.text,
        "extra": item.extra,
    }
