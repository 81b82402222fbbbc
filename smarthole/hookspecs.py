"""Every hook a smarthole plugin can implement.

Implement a hook with the ``hookimpl`` marker and a function of the same name; take only the
parameters you need::

    from smarthole import hookimpl

    @hookimpl
    def deliver(outbox_item):
        print(outbox_item.kind, outbox_item.text)

Families: ``register_*`` hooks run once at startup and receive a ``register`` callable;
past-tense hooks (``message_received``, ``message_stored``, ``turn_failed``) and ``event``,
``deliver`` are notifications: an exception inside one is logged with the plugin's name and
processing goes on. Hooks may gain parameters in later versions, never lose or rename them, so
always accept them by name. The docs (``docs/plugins.md``) have a section for each hook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from datetime import datetime

    from .config import Config
    from .db.events import Event
    from .db.ledger import LedgerEntry
    from .db.outbox import OutboxItem
    from .db.plugindata import PluginData
    from .db.records import Conversation, Message, StoredMessage
    from .db.store import Store
    from .home import Home

hookspec = pluggy.HookspecMarker("smarthole")
hookimpl = pluggy.HookimplMarker("smarthole")
"""Marker for plugin hook implementations: ``@hookimpl def startup(app): ...``."""


class PluginApp(Protocol):
    """What hooks (and tools, through ``ToolContext.app``) receive as ``app``.

    The daemon's application object has more; this is the part plugins may rely on.
    """

    home: Home
    config: Config

    @property
    def store(self) -> Store:
        """The home's database (opened on first use)."""
        ...

    def settings(self, plugin_name: str) -> Any:
        """A plugin's validated ``[plugins.<name>]`` settings (see ``register_settings``)."""
        ...

    def plugin_data(self, plugin_name: str) -> PluginData:
        """A plugin's own key-value store, kept in the database."""
        ...

    def now(self) -> datetime:
        """The current time (UTC), as the daemon's clock sees it."""
        ...


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for, before it runs (``before_tool_call``)."""

    tool: str
    input: Any
    conversation: str
    channel: str
    agent: str  # the entry agent's name, or the team agent's
    tool_use_id: str
    task: str | None = None  # a team agent's call: its task's id


@dataclass(frozen=True)
class Deny:
    """``before_tool_call``'s answer that refuses a call: the model reads ``reason``."""

    reason: str = field(default="denied by a plugin")


@dataclass(frozen=True)
class CommandReply:
    """What a command answers: the reply's text, and whether it did what was asked.

    ``conversation``: the conversation the reply belongs to, when the command chose or made one
    (``/resume``); else the channel's current one. ``follow``: the id of a message the command
    queued (``/new text``, ``/retry``), whose reply answers it; front matter ``next``."""

    text: str
    ok: bool = True
    conversation: str | None = None
    follow: str | None = None  # a message the command put in the ledger, whose reply comes next


@dataclass
class CommandContext:
    """What a command's handler works with: the message, its channel, and the home's parts.

    ``parts`` are the composition root's (``conversations``, ``ledger``, ``store``, ``events``,
    ``outbox_record``, ``usage``, ``approvals``, ``answers``, ``tasks``, ``pending``,
    ``arrivals``: the running turns, ``message_commands``), looked up by attribute; internal,
    so a plugin's command reads what it needs and may have to follow changes."""

    name: str
    args: str
    entry: LedgerEntry
    app: PluginApp
    parts: Any
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def channel(self) -> str:
        return self.entry.channel

    @property
    def message_id(self) -> str:
        return self.entry.id

    def current(self) -> Conversation | None:
        """The conversation the command is about: the open one its message names (a web
        page's composer names its own), else the channel's current one, where its next
        message goes (none after ``/new``)."""
        named = self.entry.message.conversation
        found = self.parts.store.conversation(named) if named else None
        if found is not None and not found.ended:
            return found
        return self.parts.conversations.current(self.channel)


FAIL_CLOSED_HOOKS = frozenset({"before_tool_call"})
"""Isolated hooks whose failure answers ``Deny`` rather than nothing: a plugin that guards a
call must not let it through by raising."""

STRICT_HOOKS = frozenset(
    {
        "register_tools",
        "register_settings",
        "register_commands",
        "register_message_commands",
        "register_channels",
        "startup",
    }
)
"""Hooks whose failure stops startup with a ``PluginError`` naming the plugin.

Every other hook is isolated: an implementation that raises is logged with its plugin's name
and returns nothing, and the other implementations still run.
"""


@hookspec
def register_tools(register: Callable[..., Any], app: PluginApp) -> None:
    """Register tools the agent may call.

    A tool is a typed Python function; its docstring's first paragraph is the description the
    model sees, ``:param name:`` lines describe the parameters, and the JSON schema comes from the
    signature. A parameter annotated ``ToolContext`` (from ``smarthole.tools``) is not shown to the
    model: it receives the conversation, turn and outbox of the call. Return a string (or any
    JSON-serialisable value); raise ``smarthole.errors.ToolError`` with a message the model can
    act on when the tool cannot do what was asked.

    :param register: ``register(fn, idempotent=False, name=None)``. Pass ``idempotent=True``
        when running the tool twice with the same input does no harm: after a crash in the
        middle of such a tool the daemon runs it again instead of reporting an unknown outcome.
        Pass ``read_only=True`` when it changes nothing (it reads, lists or searches): a replay
        may run it for real (``smarthole replay --live-tools``), and a fork does not list it
        among what the original did after the fork point.
    :param app: the running application (home, config, plugin data, settings).
    """


@hookspec
def register_settings(register: Callable[[str, type], None]) -> None:
    """Declare the settings a plugin reads from its ``[plugins.<name>]`` config table.

    ``register(name, SettingsClass)`` takes the plugin's name and a dataclass whose fields (with
    type hints and defaults) are the allowed keys. The table is validated at startup: an unknown
    key, a wrong type or an exception from the dataclass's ``__post_init__`` stops startup with
    a message naming ``[plugins.<name>] key``. Read the result with ``app.settings(name)``.

    :param register: ``register(name, settings_dataclass)``.
    """


@hookspec
def register_commands(register: Callable[..., argparse.ArgumentParser]) -> None:
    """Add subcommands to the ``smarthole`` command line.

    ``register(name, handler, help, aliases=())`` adds command ``name`` (with ``--home DIR`` and
    ``-v`` already) and returns its ``argparse.ArgumentParser``: add the command's options to
    it. When the command is chosen, ``handler(args)`` runs with the parsed
    ``argparse.Namespace`` (``args.home`` is the ``--home`` given, or None) and returns the exit
    status (None means 0); a ``SmartholeError`` it raises is printed as one line, as
    smarthole's own are.

    Called before the command line is read (unless it names one of smarthole's own commands,
    whose names no plugin may take), when the home is not known yet: so only the plugins of
    installed packages (entry points) take part, not the home's ``plugins/`` folder or its
    ``[plugins]`` settings (``SMARTHOLE_PLUGINS`` and ``SMARTHOLE_DISABLE_PLUGIN_AUTOLOAD`` do
    apply). A name already taken, or a plugin that fails here, leaves the plugins' commands
    out, with a warning naming the plugin; smarthole's own commands still work.

    :param register: ``register(name, handler, help, aliases=())``; returns the new command's
        parser.
    """


@hookspec
def register_message_commands(register: Callable[..., Any], app: PluginApp) -> None:
    """Add commands a message may carry: a message whose text starts with ``/name``.

    Such a message is answered by the handler, without a model call; its reply is an outbox
    item of kind ``command``. ``handler(context)`` gets a ``CommandContext`` (``args``: the
    text after the name; ``channel``; ``entry``: the ledger entry; ``current()``: the channel's
    current conversation; ``parts``: the store, ledger, conversations...) and returns a
    ``CommandReply(text, ok=True)`` or a string. It runs inside the transaction that records
    the command as taken, exactly once; if it raises, what it changed is undone and the reply
    says it failed. A name already taken stops startup with the plugin's name.

    :param register: ``register(name, handler, help, usage="", immediate=False)``;
        ``immediate=True`` runs the command at once even while a turn of its channel runs.
    :param app: the running application.
    """


@hookspec
def register_channels(register: Callable[[Any], None], app: PluginApp) -> None:
    """Offer channels: other ways in and out of smarthole (a chat, a mail account...).

    Called once as the daemon starts, after ``startup``'s plugins are up. ``register(channel)``
    takes a :class:`smarthole.channels.Channel`; smarthole starts it, hands it the replies to
    the messages it brought in, shows its status and stops it with the daemon. Register
    nothing when the channel is not configured. See ``docs/channels.md``.

    :param register: ``register(channel)``; a second channel of the same name is an error.
    :param app: the running application.
    """


@hookspec
def startup(app: PluginApp) -> None:
    """The daemon (or a CLI command that processes messages) is starting.

    Called once, after plugins are loaded and settings validated, before the first message is
    claimed. Start background threads here and stop them in :func:`shutdown`. An exception
    here stops startup with the plugin's name.

    :param app: the running application.
    """


@hookspec
def shutdown(app: PluginApp) -> None:
    """The daemon is stopping, after in-flight turns finished or were safely abandoned.

    :param app: the running application.
    """


@hookspec
def message_received(message: Message) -> None:
    """An inbox file was claimed and parsed, before any processing.

    Not called again when a claimed message is retried or resumed after a crash.

    :param message: the parsed message (``id``, ``text``, ``channel``, ``conversation``,
        ``new_conversation``, ``timestamp``, ``metadata``, ``source_name``).
    """


@hookspec
def message_stored(conversation: Conversation, message: StoredMessage) -> None:
    """A conversation message was committed to the store.

    Fires once for the user's message, once for each assistant message (including those with
    ``tool_use`` blocks) and once for each tool result, each right after its commit.

    :param conversation: the conversation it belongs to.
    :param message: the stored message (``role``, ``kind``, ``content`` blocks, ``turn``).
    """


@hookspec
def deliver(outbox_item: OutboxItem, app: PluginApp) -> None:
    """An outbox file was durably written; deliver it further (notify, post, sync...).

    Called for question and message files as ``send_message`` produces them, and for the final
    response or error file of every inbox message. Delivery is at least once: after a crash the
    same item (same ``id``) may be delivered again. Do slow work in a thread of your own; this
    call sits on the message's path.

    :param outbox_item: ``id, in_reply_to, conversation, channel, turn, kind,
        waiting_for_reply, text, path, created_at``.
    :param app: the application that wrote it, as ``startup`` received it.
    """


@hookspec
def turn_failed(message: Message, error: Exception) -> None:
    """An attempt at a message's turn failed.

    Called for every failed attempt, whether the message is deferred for a later attempt or
    dead (``error.retryable`` tells).

    :param message: the inbox message whose turn failed.
    :param error: a :class:`smarthole.errors.TurnError`: a ``ModelError`` when the Messages API
        call failed, an ``InternalError`` when a bug (in smarthole or a plugin) broke the turn.
    """


@hookspec
def event(event: Event) -> None:
    """A lifecycle event was stored (``turn_started``, ``tool_called``, ``reply_written``...).

    Every event reaches this hook in the daemon, in the order of ``event.id``, whichever
    process wrote it: the daemon's own work, and CLI commands such as ``rename``, ``new`` or
    ``tasks abort``, also while the daemon was down (it follows the events table from a cursor
    stored in the database, and delivers what it missed when it starts). The call comes from
    the daemon's event thread, a moment after the event's commit. Each event is delivered
    once; only a crash between the call and the commit of the cursor past it delivers that one
    event again, so a plugin that must not act twice remembers the last ``event.id`` it saw.

    :param event: ``id, type, at, conversation, channel, turn, message_id`` and the event's own
        fields in ``data``; ``event.as_dict()`` gives the JSON form that ``smarthole events
        --json`` prints.
    """


@hookspec(firstresult=True)
def before_tool_call(call: ToolCall, app: PluginApp) -> str | Deny | None:
    """Say whether a tool call may run, must wait for a person's approval, or is refused.

    Called before every tool call of the entry agent and of team agents, after a crash too
    (a call already approved or decided is not asked about again). Stops at first non-None
    result. An implementation that raises refuses the call (and the error is logged).

    :param call: the tool's name, its input, the conversation, channel, agent and tool-use id.
    :param app: the running application.
    :return: ``"allow"`` (run it), ``"ask"`` (wait for a person's approval, see
        ``docs/approvals.md``), ``Deny(reason)`` (the model gets a tool error), or None to
        leave it to ``[approvals]`` in ``config.toml``.
    """


@hookspec
def extend_system_prompt(conversation: Conversation, message: Message) -> str | None:
    """Add a section to the system prompt of a turn.

    Every non-empty string returned is appended, after the built-in sections of the
    conversation's system block, which the prompt cache reuses turn after turn: return the
    same text for the same conversation where you can.

    :param conversation: the conversation the turn belongs to.
    :param message: the inbox message being answered.
    :return: Markdown text to add, or None.
    """
