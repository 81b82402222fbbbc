"""One terminal conversation, for ``chat`` and ``resume``: what is typed is sent, and what
comes back is shown, until end of input.

An approval item shown for the conversation sends the person back to the prompt, where
``/approve``, ``/approve always`` or ``/deny [reason]`` answers it through the inbox (the file
``smarthole approve`` writes); anything else typed is sent, and is the answer instead.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from ..db.outbox import OutboxItem
from ..errors import SmartholeError
from ..formats import utc_now
from .approving import CHAT_HINT, ChatAnswer, chat_answer, names_approval
from .approving import answer as answer_approval
from .mailbox import Mailbox, Retrying, ToolCalled, retry_line
from .output import body, one_line, plain, short

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime


def _plain_tool_line(out: TextIO) -> Callable[[str], None]:
    def show(name: str) -> None:
        out.write(f"{tool_line(name)}\n")
        out.flush()

    return show


def tool_line(name: str) -> str:
    """The line that shows a tool call, the name escaped (the model chose it)."""
    return f"  · {short(name, 60)}"


@dataclass
class ChatSession:
    """One terminal conversation; ``run`` reads lines until end of input.

    Replies go to ``out``, the tools the agent calls to ``show_tool`` (plain lines on ``out``
    unless given), and a line for each attempt to be retried to ``err``. ``waiting_for`` is the
    message whose reply is awaited, if any: a Ctrl-C that ends the chat leaves it there.
    """

    root: Runtime
    channel: str
    conversation_id: str | None
    reader: Callable[[], str | None]
    out: TextIO
    timeout: float = 600.0
    stop: threading.Event = field(default_factory=threading.Event)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    show_tool: Callable[[str], None] | None = None
    last_message_id: str | None = None
    waiting_for: str | None = None
    timed_out: bool = False
    approval: OutboxItem | None = None  # the approval item shown last, while it waits
    shown: set[str] = field(default_factory=set)  # the outbox items shown so far

    def current_conversation(self) -> str | None:
        """The conversation of this chat, once its first message has a turn."""
        if self.conversation_id is None and self.last_message_id is not None:
            turn = self.root.store.turn_for_message(self.last_message_id)
            self.conversation_id = turn.conversation_id if turn else None
        return self.conversation_id

    def run(self) -> None:
        mailbox = Mailbox(self.root.home, self.root.outbox_record, self.root.events)
        while not self.stop.is_set():
            line = self.reader()
            if line is None:
                self._say_what_waits()
                return
            text = line.strip()
            if not text:
                continue
            if not self._caught_up(mailbox):
                if self.timed_out:
                    return
                continue
            try:  # with no approval waiting here, /approve ID and /deny ID go to the daemon
                answer = (
                    None if self.approval is None and names_approval(text) else chat_answer(text)
                )
            except SmartholeError as exc:
                self._say(str(exc))
                continue
            if answer is not None:
                message_id = self._answer(mailbox, answer)
                if message_id is None:
                    continue
            elif self.approval is not None and self.waiting_for is not None:
                # A plain message while a call waits is the answer: the reply is the turn's.
                message_id = self.waiting_for
                mailbox.follow_from_now(message_id)
                self.approval = None
                mailbox.send(text, channel=self.channel, conversation=self.conversation_id)
            else:
                message_id = mailbox.send(
                    text,
                    channel=self.channel,
                    conversation=self.conversation_id,
                    new_conversation=self.conversation_id is None,
                )
                self.last_message_id = message_id
            if not self._show_replies(mailbox, message_id):
                return

    def _caught_up(self, mailbox: Mailbox) -> bool:
        """When the approval shown last was answered elsewhere meanwhile, first show that and
        its turn's replies; False when the line typed is not to be used (no reply came in
        time, or a new approval came meanwhile: it is shown, and nothing is sent)."""
        if self.approval is None or self.waiting_for is None:
            return True
        approval_id = str((self.approval.extra or {}).get("approval", ""))
        found = self.root.approvals.get(approval_id)
        if found is None or found.waiting:
            return True
        self.approval = None
        self._say(
            f"(approval {one_line(approval_id)} was answered elsewhere: "
            f"{found.status.value} by {one_line(str(found.decided_by))})"
        )
        mailbox.follow_from_now(self.waiting_for)
        if not self._show_replies(mailbox, self.waiting_for):
            return False
        if self.approval is not None:
            self._say("(nothing was sent: a new approval came meanwhile)")
            return False
        return True

    def _answer(self, mailbox: Mailbox, answer: ChatAnswer) -> str | None:
        """Send ``answer`` to the approval waiting in this chat; the message whose reply to
        follow then, or None when nothing was sent (the line that says why is printed)."""
        approval, message_id = self.approval, self.waiting_for
        if approval is None or message_id is None:
            self._say("no approval waits in this chat; nothing was sent")
            return None
        extra = approval.extra or {}
        approval_id, tool = str(extra.get("approval", "")), str(extra.get("tool", ""))
        mailbox.follow_from_now(message_id)
        self.approval = None
        try:
            answer_approval(
                self.root.home,
                self.root.approvals,
                approval_id,
                answer.decision,
                always=answer.always,
                reason=answer.reason,
            )
        except SmartholeError as exc:  # decided elsewhere meanwhile: its turn goes on
            self._say(str(exc))
        else:
            self._say(answer.done(approval_id, tool))
        return message_id

    def _say(self, line: str) -> None:
        self.out.write(f"{line}\n")
        self.out.flush()

    def _say_what_waits(self) -> None:
        """At end of input, how to answer the approval still waiting, if one is."""
        if self.approval is not None:
            approval_id = one_line(str((self.approval.extra or {}).get("approval", "")))
            self._say(
                f"(approval {approval_id} still waits: `smarthole approve {approval_id}` "
                f"or `smarthole deny {approval_id}` answers it)"
            )

    def _show_replies(self, mailbox: Mailbox, message_id: str) -> bool:
        """Show what comes for ``message_id`` until its final reply, or until an approval
        item (the turn waits for the person: back to the prompt); False when nothing final
        came in time."""
        final = None
        show_tool = self.show_tool or _plain_tool_line(self.out)
        self.waiting_for = message_id
        follow = mailbox.follow(message_id, timeout=self.timeout, stop=self.stop, seen=self.shown)
        for item in follow:
            if isinstance(item, ToolCalled):
                show_tool(item.name)
                continue
            if isinstance(item, Retrying):
                self.err.write(retry_line(item, utc_now()) + "\n")
                self.err.flush()
                continue
            self.conversation_id = item.conversation or self.conversation_id
            label = {
                "question": "smarthole asks",
                "error": "smarthole (error)",
                "approval": "smarthole asks your approval",
            }.get(item.kind, "smarthole")
            self.out.write(f"{label}: {body(plain(item.text))}\n\n")
            self.out.flush()
            if item.kind == "approval" and (item.extra or {}).get("approval"):
                self.approval = item
                self._say(CHAT_HINT)
                return True
            final = item if item.final else final
            if item.kind == "command":  # a message command: it may start or choose one
                return self._after_command(mailbox, item)
        if final is None and not self.stop.is_set():
            self.timed_out = True
            self.out.write(
                f"(no reply within {self.timeout:g}s; the conversation is kept, and the reply "
                "will arrive in the outbox when the daemon gets to it)\n"
            )
            self.out.flush()
        if final is not None:
            self.waiting_for = None
        return final is not None

    def _after_command(self, mailbox: Mailbox, reply: OutboxItem) -> bool:
        """A command's reply was shown: after ``/new`` the next message starts a conversation;
        a message the command queued (``/new text``, ``/retry``) has its reply shown too."""
        extra = reply.extra or {}
        if extra.get("command") == "new":
            self.conversation_id = None
        self.waiting_for = None
        follow = extra.get("next")
        if not isinstance(follow, str):
            return True
        self.last_message_id = follow
        return self._show_replies(mailbox, follow)

    def where_to_see(self, message_id: str) -> str:
        """How to see the reply to ``message_id`` later, from another terminal."""
        conversation = self.current_conversation()
        if conversation:
            return f"`smarthole show {one_line(conversation)}` shows its reply"
        return f"`smarthole status` shows where message {one_line(message_id)} stands"
