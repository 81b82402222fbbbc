"""Fork a conversation at a turn: a new conversation that holds turns 1..N of the original.

:func:`fork` is the one way a fork is made, for ``smarthole fork``, the web view's "Fork from
here" and (later) a ``/fork [N]`` message command. The copy is one commit
(``db.forking.ForkTables.copy_conversation``): the person's messages, the replies, the tool
calls and results, attachments by reference (no blob copied). The original is not changed.

The fork's next turn is told, once, which tools with side effects the original ran after the
fork point (:func:`after_the_fork_point`), so the model does not assume the world is as it was
at turn N. A tool has side effects unless it is registered read-only (an MCP tool: its
``readOnlyHint``); a tool not known where the fork is made counts as having them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..agent.prompts import UNTITLED, after_fork_note
from ..db.events import about
from ..db.forking import ForkSpec
from ..errors import UsageError
from ..formats import without_control_characters

if TYPE_CHECKING:
    from ..conversations import Conversations
    from ..db.events import EventLog
    from ..db.records import Conversation
    from ..db.store import Store
    from ..home import Home
    from ..tools import Tool

logger = logging.getLogger(__name__)

FORKED = "forked"  # the end reason of the conversation a fork replaces, and of a kept-aside fork
MAX_LISTED = 20  # calls named in the note; the rest are counted
MAX_ARGUMENT = 60  # characters of a call's first argument in the note
MAX_TITLE = 200


def read_only_tools(tools: Any) -> Callable[[str], bool]:
    """Whether a tool of ``tools`` (a registry) is read-only, by name; unknown names are not."""
    known: dict[str, Tool] = {tool.name: tool for tool in tools}
    return lambda name: bool(getattr(known.get(name), "read_only", False))


def home_read_only(home: Home) -> Callable[[str], bool]:
    """Which tools are read-only, as the home's plugins register them, for a process with no
    app of its own (a command, the web view). An MCP server's tools are not known there: they
    count as having side effects, the safe side."""
    from ..app import App
    from ..errors import ConfigError, PluginError

    try:
        app = App.load(home)
    except (ConfigError, PluginError):
        return lambda name: False
    try:
        return read_only_tools(app.tools)
    finally:
        app.close()


def fork(
    store: Store,
    conversations: Conversations,
    events: EventLog,
    wanted: str,
    *,
    turn: int | None = None,
    title: str | None = None,
    channel: str | None = None,
    keep_current: bool = False,
    read_only: Callable[[str], bool] = lambda name: False,
) -> Conversation:
    """Fork conversation ``wanted`` (an id or unique prefix) after its turn ``turn`` (default:
    its last); the fork becomes its channel's current conversation unless ``keep_current``.
    ``UsageError`` for a turn it does not have, or one not over yet."""
    original = conversations.get(wanted)
    upto = original.turns if turn is None else turn
    if upto < 1 or upto > original.turns:
        raise UsageError(
            f"conversation {original.id} has turns 1 to {original.turns}; there is no turn {upto}"
        )
    unfinished = store.unfinished_turns(original.id, upto)
    if unfinished:
        raise UsageError(
            f"turn {unfinished[0]} of conversation {original.id} is not over yet; "
            "fork it when it has finished"
        )
    target = channel or original.channel
    name = fork_title(title, original, upto)
    spec = ForkSpec(
        original=original.id,
        turn=upto,
        channel=target,
        title=name,
        ended=FORKED if keep_current else None,
        note=after_the_fork_point(store, original.id, upto, read_only),
    )
    with store.transaction():
        if not keep_current:  # one open conversation a channel: the fork is the current one
            current = conversations.current(target)
            if current is not None:
                conversations.end(current, FORKED)
        forked = store.copy_conversation(spec)
        events.emit(
            "conversation_started",
            **about(forked),
            forked_from=original.id,
            forked_turn=upto,
        )
    logger.info("forked conversation %s after turn %d as %s", original.id, upto, forked.id)
    return forked


def fork_title(title: str | None, original: Conversation, turn: int) -> str:
    """The title asked for (plain text, bounded), else "<original's> (fork at turn N)"."""
    if title is not None:
        cleaned = " ".join(without_control_characters(title).split())[:MAX_TITLE]
        if not cleaned:
            raise UsageError("the title is empty")
        return cleaned
    return f"{original.title or UNTITLED} (fork at turn {turn})"


def after_the_fork_point(
    store: Store, original: str, turn: int, read_only: Callable[[str], bool]
) -> str | None:
    """The note for the fork's next turn: the calls of tools with side effects that the
    original ran after ``turn``; None when it ran none."""
    calls = [
        f"{name}{_argument(arguments)} (turn {number})"
        for number, name, arguments in store.runs_after(original, turn)
        if not read_only(name)
    ]
    if not calls:
        return None
    listed = calls[:MAX_LISTED]
    if len(calls) > MAX_LISTED:
        listed.append(f"and {len(calls) - MAX_LISTED} more calls")
    return after_fork_note(turn, listed)


def _argument(arguments: Any) -> str:
    """A call's first text argument, on one line and bounded ('' if it has none)."""
    if isinstance(arguments, dict):
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                text = " ".join(without_control_characters(value).split())
                if len(text) > MAX_ARGUMENT:
                    text = text[: MAX_ARGUMENT - 1] + "…"
                return f" {text}"
    return ""
