"""Built-in conversation tools: send_message, end_conversation, get_conversation,
search_conversations, and the schedule tools of ``schedules`` (schedule_message,
cancel_schedule)."""

from __future__ import annotations

from typing import Any

from .. import hookimpl
from ..errors import LookupFailed, ToolError
from ..tools import ToolContext
from .schedules import cancel_schedule, schedule_message


@hookimpl
def register_tools(register: Any) -> None:
    # Re-running these after a crash is harmless: send_message writes its outbox file under
    # an id derived from the tool call, so a second run finds it already written.
    register(send_message, idempotent=True)
    register(end_conversation, idempotent=True)
    register(get_conversation, idempotent=True, read_only=True)
    register(search_conversations, idempotent=True, read_only=True)
    register(schedule_message)  # run again after a crash, it would schedule twice
    register(cancel_schedule, idempotent=True)


def send_message(message: str, is_question: bool = False, *, context: ToolContext) -> str:
    """Send a message to the user right away, before your final reply.

    Use it for progress updates, or with is_question=true to ask the user something you need
    to know. After asking, end your turn: the user's next message will be their answer.

    :param message: The text to send to the user.
    :param is_question: True when you are asking the user a question and will wait for the
        answer.
    """
    if not message.strip():
        raise ToolError("message is required and must be a non-empty string.")
    context.send_message(message.strip(), is_question=is_question)
    if is_question:
        return (
            "Question sent. Finish your turn now with a short reply; the user's next "
            "message will be their answer."
        )
    return "Message sent successfully."


def end_conversation(reason: str | None = None, *, context: ToolContext) -> str:
    """End the current conversation once this reply is sent.

    Call it when the user's request is fully done or they say goodbye. The user's next message
    then starts a new conversation; this one is summarised for future reference.

    :param reason: Why the conversation is ending, in a few words.
    """
    context.end_conversation(reason)
    suffix = f" (reason: {reason})" if reason else ""
    return (
        "The conversation will end after this reply; the user's next message starts a new "
        f"conversation{suffix}."
    )


def get_conversation(
    conversation_id: str | None = None, list_recent: int = 10, *, context: ToolContext
) -> dict[str, Any]:
    """Read an earlier conversation, or list recent ones of this channel.

    With conversation_id, returns that conversation's title, summary, dates and messages.
    Without it, lists the most recent conversations of this channel (newest first) with their
    ids, titles, summaries and dates.

    :param conversation_id: The id (or a unique prefix) of the conversation to read.
    :param list_recent: How many recent conversations to list when no id is given (1-50).
    """
    from ..agent.prompts import dialogue_text
    from ..conversations import resolve_conversation

    store = context.app.store
    if conversation_id:
        try:
            conversation = resolve_conversation(store, conversation_id)
        except LookupFailed as exc:
            raise ToolError(str(exc)) from exc
        return {
            **_describe(conversation),
            "transcript": dialogue_text(store.messages(conversation.id)),
        }
    limit = min(max(list_recent, 1), 50)
    recent = store.recent_conversations(channel=context.channel, limit=limit + 1)
    return {
        "conversations": [_describe(c) for c in recent if c.id != context.conversation_id][:limit]
    }


def _describe(conversation: Any) -> dict[str, Any]:
    return {
        "id": conversation.id,
        "title": conversation.title,
        "summary": conversation.summary,
        "channel": conversation.channel,
        "turns": conversation.turns,
        "started_at": conversation.created_at.isoformat(),
        "last_active_at": conversation.updated_at.isoformat(),
        "ended_at": conversation.ended_at.isoformat() if conversation.ended_at else None,
    }


def search_conversations(query: str, limit: int = 10, *, context: ToolContext) -> str:
    """Search what was said in other conversations: the person's messages, your replies, tool
    results, team work, titles and summaries. Best matches first.

    Use it to recall something discussed before ("what did I say about the bank?"); then
    get_conversation reads a whole conversation by its id.

    :param query: Words to find. Quotes make a phrase ("oat milk"), OR gives either word,
        and a trailing * matches a prefix (recip*).
    :param limit: How many matches to return (1-50).
    """
    from ..daemon.runtime import Runtime
    from ..db.search import Filters
    from ..errors import SmartholeError

    try:
        hits = Runtime.of(context.app).search.search(
            query,
            filters=Filters(exclude=context.conversation_id),
            limit=min(max(limit, 1), 50),
        )
    except SmartholeError as exc:
        raise ToolError(str(exc)) from exc
    if not hits:
        return f"No other conversation mentions {query!r}."
    lines = [f"{len(hits)} match{'es' if len(hits) != 1 else ''}, best first:"]
    for hit in hits:
        title = f'"{hit.title}"' if hit.title else "(untitled)"
        lines.append(
            f"- conversation {hit.conversation_id} {title}, {hit.at:%Y-%m-%d %H:%M} UTC, "
            f"{hit.who}: {hit.marked()}"
        )
    return "\n".join(lines)
