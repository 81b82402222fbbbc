"""The built-in message commands: ``/help``, ``/new``, ``/list``, ``/resume``, ``/title``,
``/status``, ``/usage``, ``/stop``, ``/retry``, ``/fork``, ``/approve`` and ``/deny``.

Registered through ``register_message_commands`` like a plugin's. Each handler runs inside the
commit that records its command as taken (``pipeline.commands.runner``): what it changes in the
store happens once, or (when it raises) not at all. ``context.parts`` is the composition root.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import hookimpl
from ..db.states import ApprovalState, MessageStatus
from ..errors import LookupFailed, SmartholeError
from ..formats import iso, new_id, visible
from ..pipeline.busy import HALT_STOP
from ..pipeline.commands import CommandReply

if TYPE_CHECKING:
    from ..db.records import Conversation
    from ..pipeline.commands import CommandContext

LISTED = 10  # conversations /list shows, numbered as `smarthole ls` numbers them


@hookimpl
def register_message_commands(register: Any) -> None:
    register("help", help_, "the commands, one line each", immediate=True)
    register(
        "new",
        new,
        "a new conversation in this channel; the text, if any, is its first message",
        usage="[text]",
    )
    register("list", list_, "this channel's recent conversations, numbered", immediate=True)
    register("resume", resume, "make conversation N of /list (or ID) current", usage="N|ID")
    register("title", title, "rename the current conversation", usage="TEXT", immediate=True)
    register("status", status, "the daemon, this channel's queue, what waits", immediate=True)
    register("usage", usage, "tokens of this conversation and of today", immediate=True)
    register("stop", stop, "stop this channel's running turn or task", immediate=True)
    register("retry", retry, "the last turn again")
    register("fork", fork, "a new conversation from this one's turns 1..N", usage="[N]")
    register(
        "approve",
        approve,
        "approve a waiting tool call (always: for the rest of its conversation)",
        usage="[always] ID",
        immediate=True,
    )
    register("deny", deny, "deny a waiting tool call", usage="ID [reason]", immediate=True)


def _refuse(text: str) -> CommandReply:
    return CommandReply(text, ok=False)


def _name(conversation: Conversation) -> str:
    return f'"{visible(conversation.title or "untitled")}" ({conversation.id[:8]})'


# -- conversations ---------------------------------------------------------------------------


def help_(context: CommandContext) -> str:
    lines = ["Commands (anything else goes to the agent; start with // to send a /):"]
    lines += [command.help_line() for command in context.parts.message_commands]
    return "\n".join(lines)


def new(context: CommandContext) -> CommandReply:
    ended = context.parts.conversations.end_active(context.channel, reason="new")
    said = f"Ended {_name(ended)}. " if ended is not None else ""
    if not context.args:
        return CommandReply(said + "Your next message starts a new conversation.")
    message = context.entry.message
    first = type(message)(
        id=f"{message.id}-new",
        text=context.args,
        source_name=message.source_name,
        timestamp=message.timestamp,
        content_hash=message.content_hash,
        channel=context.channel,
        new_conversation=True,
        metadata=dict(message.metadata),
    )
    context.parts.ledger.admit(first, channel=context.channel, claimed_path=None)
    text = said + "A new conversation starts with your message."
    return CommandReply(text, follow=first.id)


def _recent(context: CommandContext) -> list[Any]:
    return context.parts.conversations.recent(
        channel=context.channel, limit=LISTED, now=context.app.now()
    )


def list_(context: CommandContext) -> str:
    views = _recent(context)
    if not views:
        return "No conversations in this channel yet."
    lines = []
    for number, view in enumerate(views, start=1):
        conversation = view.conversation
        lines.append(
            f"{number}. {visible(conversation.title or 'untitled')} — {view.status.value}, "
            f"{conversation.turns} turn(s), {conversation.id[:8]}"
        )
    return "\n".join([*lines, "(/resume N makes one current)"])


def resume(context: CommandContext) -> CommandReply:
    wanted = context.args.strip()
    if not wanted:
        return _refuse("Say which: /resume N (from /list) or /resume ID.")
    conversations = context.parts.conversations
    if wanted.isdigit() and len(wanted) <= 3:
        views = _recent(context)
        if not 1 <= int(wanted) <= len(views):
            return _refuse(f"There is no conversation {wanted} in /list ({len(views)} listed).")
        chosen = views[int(wanted) - 1].conversation
    else:
        try:
            chosen = conversations.get(wanted)
        except LookupFailed as exc:
            return _refuse(str(exc))
    if chosen.channel != context.channel:
        return _refuse(f"{_name(chosen)} belongs to channel {chosen.channel}, not this one.")
    context.parts.store.reopen_conversation(chosen.id)  # the most recent: current here
    context.parts.events.emit(
        "conversation_resumed", conversation=chosen.id, channel=chosen.channel, reopened=True
    )
    said = conversations.export(chosen, context.parts.outbox_record, entry_agent="agent")
    lines = [f"Now current: {_name(chosen)}."]
    for turn in said["turns"][-2:]:
        who = "you" if turn["role"] == "human" else "agent"
        text = " ".join(str(turn["content"]).split())
        lines.append(f"{who}: {text[:300]}{' …' if len(text) > 300 else ''}")
    return CommandReply("\n".join(lines), conversation=chosen.id)


def title(context: CommandContext) -> CommandReply:
    current = context.current()
    if current is None:
        return _refuse("No current conversation to rename.")
    try:
        renamed = context.parts.conversations.rename(current.id, context.args)
    except SmartholeError as exc:
        return _refuse(str(exc))
    return CommandReply(f"Renamed to {_name(renamed)}.")


# -- what goes on ----------------------------------------------------------------------------


def status(context: CommandContext) -> str:
    parts, channel = context.parts, context.channel
    arrivals = parts.arrivals
    counts = parts.ledger.counts()
    waiting = [e for e in parts.ledger.by_status(MessageStatus.QUEUED) if e.channel == channel]
    deferred = [e for e in parts.ledger.by_status(MessageStatus.DEFERRED) if e.channel == channel]
    running = arrivals.running_in(channel)
    lines = [
        "smarthole is running.",
        f"All channels: {counts.get('queued', 0)} queued, {counts.get('in_progress', 0)} in "
        f"progress, {counts.get('deferred', 0)} deferred, {counts.get('dead', 0)} dead.",
        f"This channel ({channel}, busy policy {arrivals.policy(channel).value}): "
        + (f"a turn runs (message {running}); " if running else "no turn runs; ")
        + f"{len([e for e in waiting if e.id != context.message_id])} waiting, "
        f"{len(deferred)} deferred.",
    ]
    approvals = parts.approvals.waiting(channel=channel)
    for approval in approvals:
        lines.append(
            f"Waits for your approval: {approval.id} ({visible(approval.tool)}), "
            f"until {iso(approval.expires_at)}."
        )
    current = context.current()
    if current is not None:
        lines.append(f"Current conversation: {_name(current)}.")
        question = parts.pending.get(current.id)
        if question is not None:
            lines.append(f"It waits for your answer to: {visible(question.question)[:200]}")
    return "\n".join(lines)


def usage(context: CommandContext) -> str:
    """Tokens, and dollars where the model's price is known (``[prices]``, docs/budget.md)."""
    from ..db.spendreports import Period

    usage_log, reports = context.parts.usage, context.parts.spend_reports
    lines = []
    current = context.current()
    if current is not None:
        costs = list(reports.conversation_costs(current.id).values())
        if costs:
            tokens = sum((c.tokens for c in costs[1:]), costs[0].tokens)
            cost = sum(c.cost for c in costs), sum(c.unpriced for c in costs)
            lines.append(_usage_line("This conversation", tokens, cost))
        else:
            lines.append("This conversation: no model calls yet.")
    now = context.app.now()
    for label, period in (("Today (UTC)", Period.day(now)), ("This month", Period.month(now))):
        totals = reports.totals(period)
        lines.append(_usage_line(label, totals.tokens, (totals.cost, totals.unpriced)))
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    lines.append(_usage_line("Last 7 days", usage_log.since(midnight - timedelta(days=6))))
    return "\n".join(lines)


def _usage_line(label: str, totals: Any, cost: tuple[int, int] | None = None) -> str:
    """One line of /usage: requests and tokens, and ``cost`` (micro-dollars, and how many
    responses had no known price) where it was counted."""
    from ..config.prices import dollars

    line = (
        f"{label}: {totals.requests} request(s), {totals.input_tokens:,} input tokens "
        f"(+{totals.cache_read_input_tokens:,} from the cache, "
        f"+{totals.cache_creation_input_tokens:,} written to it), "
        f"{totals.output_tokens:,} output tokens"
    )
    if cost is None:
        return line
    spent, unpriced = cost
    return line + f", {dollars(spent)}" + (f" (+{unpriced} unpriced)" if unpriced else "")


def fork(context: CommandContext) -> CommandReply:
    """``/fork [N]``: the current conversation's turns 1..N (default: all) in a new one, which
    becomes this channel's current (``pipeline.forking``, as ``smarthole fork`` does)."""
    from ..pipeline.forking import fork as fork_conversation
    from ..pipeline.forking import read_only_tools

    current = context.current()
    if current is None:
        return _refuse("No current conversation to fork.")
    wanted = context.args.strip()
    if wanted and not (wanted.isdigit() and len(wanted) <= 6):
        return _refuse(f"/fork takes a turn number, not {visible(wanted)[:40]!r}.")
    parts = context.parts
    try:
        forked = fork_conversation(
            parts.store,
            parts.conversations,
            parts.events,
            current.id,
            turn=int(wanted) if wanted else None,
            read_only=read_only_tools(parts.app.tools),
        )
    except SmartholeError as exc:
        return _refuse(str(exc))
    upto = f"turn {wanted}" if wanted else "its last turn"
    text = f"Forked {_name(current)} after {upto}: {_name(forked)} is current now."
    return CommandReply(text, conversation=forked.id)


def stop(context: CommandContext) -> CommandReply:
    parts = context.parts
    running = parts.arrivals.running_in(context.channel)
    if running is not None:
        aborted = parts.arrivals.halt(running, HALT_STOP)
    else:  # no turn runs here: a task left interrupted, say
        aborted = [t.id for t in parts.tasks.running() if _in_channel(context, t)]
        for task_id in aborted:
            parts.tasks.request_abort(task_id)
    if running is None and not aborted:
        return _refuse("Nothing runs in this channel.")
    what = f"the turn of message {running}" if running else "nothing but tasks"
    tasks = f" and task(s) {', '.join(aborted)}" if aborted else ""
    return CommandReply(f"Stopping {what}{tasks} at the next safe point.")


def _in_channel(context: CommandContext, task: Any) -> bool:
    conversation = context.parts.store.conversation(task.conversation_id)
    return conversation is not None and conversation.channel == context.channel


def retry(context: CommandContext) -> CommandReply:
    """The channel's last message again: a dead one redriven, a deferred one due now, an
    answered one asked again as a new message."""
    parts = context.parts
    ledger = parts.ledger
    for entry in reversed(ledger.by_status(MessageStatus.DEAD, MessageStatus.DEFERRED)):
        if entry.channel != context.channel or parts.message_commands.is_command(
            entry.message.text
        ):
            continue
        if entry.status is MessageStatus.DEFERRED:
            ledger.make_due([entry.id])
            return CommandReply(f"Message {entry.id} is due now.")
        ledger.set_status(entry.id, MessageStatus.REDRIVE)
        ledger.admit(entry.message, channel=entry.channel, claimed_path=None)
        if entry.failed_path is not None:  # queued again from the ledger: not failed any more
            parts.store.after_commit(partial(_forget_failed, entry.failed_path))
        return CommandReply(f"Message {entry.id} is queued again.", follow=entry.id)
    current = context.current()
    turn = None if current is None else parts.store.turn(current.id, current.turns)
    asked = None if turn is None else ledger.get(turn.message_id)
    if asked is None:
        return _refuse("Nothing to retry in this channel.")
    again = type(asked.message)(
        id=f"{context.message_id}-retry-{new_id()[:6]}",
        text=asked.message.text,
        source_name=asked.message.source_name,
        timestamp=context.entry.message.timestamp,
        content_hash=asked.message.content_hash,
        channel=context.channel,
        metadata=dict(asked.message.metadata),
        attachments=asked.message.attachments,
    )
    ledger.admit(again, channel=context.channel, claimed_path=None)
    return CommandReply(f"Asking again: {visible(asked.message.text)[:200]}", follow=again.id)


def _forget_failed(path: Path) -> None:
    """A dead message's file in failed/ (and its reason beside it), once it is queued again."""
    for stale in (path, path.with_name(path.name + ".error.txt")):
        with contextlib.suppress(FileNotFoundError):
            stale.unlink()


# -- approvals -------------------------------------------------------------------------------


def approve(context: CommandContext) -> CommandReply:
    words = context.args.split()
    always = bool(words) and words[0] == "always"
    words = words[1:] if always else words
    if len(words) != 1:
        return _refuse("Say /approve ID or /approve always ID.")
    return _decide(context, words[0], ApprovalState.APPROVED, always=always)


def deny(context: CommandContext) -> CommandReply:
    wanted, _, reason = context.args.partition(" ")
    if not wanted:
        return _refuse("Say /deny ID [reason].")
    return _decide(context, wanted, ApprovalState.DENIED, note=reason.strip())


def _decide(
    context: CommandContext,
    wanted: str,
    status: ApprovalState,
    *,
    always: bool = False,
    note: str = "",
) -> CommandReply:
    approvals = context.parts.approvals
    found = approvals.get(wanted) or next(iter(approvals.with_prefix(wanted)), None)
    if found is None:
        return _refuse(f"No approval has the id {visible(wanted)}.")
    decided = context.parts.answers.decide(
        found.id, status, by="inbox", note=note, always=always, answer_id=context.message_id
    )
    if decided.error is not None:
        return _refuse(decided.error)
    verb = "Approved" if status is ApprovalState.APPROVED else "Denied"
    rest = " for the rest of this conversation" if always else ""
    return CommandReply(f"{verb} {found.id} ({visible(found.tool)}){rest}.")
