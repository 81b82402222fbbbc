"""Message commands: what a message that starts with ``/<name>`` asks smarthole itself to do.

A command is a name, a handler and a line of help, registered at startup through the
``register_message_commands`` hook (the built-ins in ``builtins/commands.py`` like any plugin's).
Adding one is one call: ``register("fork", handler, "a copy of this conversation", usage="[N]")``.
A handler gets a :class:`CommandContext` and returns a :class:`CommandReply` (or a string: an
ok reply); it runs inside the transaction that records the command as taken, so what it changes
in the store is kept together with that, or not at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import PluginError

if TYPE_CHECKING:
    from ...app import App
    from ...db.ledger import LedgerEntry
    from ...db.records import Conversation
    from ...hookspecs import PluginApp

COMMAND_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# ``/name`` at the start (after any white space), then white space or the end.
_INVOCATION = re.compile(r"\s*/([A-Za-z][A-Za-z0-9_-]{0,31})(?:\s+(.*))?", re.DOTALL)


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


Handler = Callable[["CommandContext"], "CommandReply | str"]


@dataclass(frozen=True)
class MessageCommand:
    """One command: ``/name``, its handler, and how ``/help`` shows it.

    ``immediate``: it runs as soon as it arrives, even while a turn of its channel runs
    (``/stop``, ``/status``); otherwise it waits for its turn in the channel's queue, like any
    message (``/new``, ``/resume``: they change which conversation the next message goes to)."""

    name: str
    handler: Handler
    help: str
    usage: str = ""
    immediate: bool = False
    plugin: str | None = None

    def help_line(self) -> str:
        usage = f" {self.usage}" if self.usage else ""
        return f"/{self.name}{usage} — {self.help}"


@dataclass(frozen=True)
class Invocation:
    """A message's text as a command: which one, and the text after its name."""

    command: MessageCommand
    args: str


class CommandRegistry:
    """The commands a message may carry, by name."""

    def __init__(self) -> None:
        self._commands: dict[str, MessageCommand] = {}

    def register(
        self,
        name: str,
        handler: Handler,
        help: str,
        *,
        usage: str = "",
        immediate: bool = False,
        plugin: str | None = None,
    ) -> MessageCommand:
        """Add ``/name``; ``PluginError`` for a bad or taken name."""
        if not COMMAND_NAME.fullmatch(name):
            raise PluginError(f"message command /{name}: a name is {COMMAND_NAME.pattern}")
        taken = self._commands.get(name)
        if taken is not None:
            raise PluginError(
                f"message command /{name} of plugin {plugin} is taken (by {taken.plugin})"
            )
        command = MessageCommand(name, handler, help, usage, immediate, plugin)
        self._commands[name] = command
        return command

    def get(self, name: str) -> MessageCommand | None:
        return self._commands.get(name.lower())

    def __iter__(self) -> Iterator[MessageCommand]:
        return iter(sorted(self._commands.values(), key=lambda c: c.name))

    def __len__(self) -> int:
        return len(self._commands)

    def is_command(self, text: str) -> bool:
        """Whether ``text`` carries one of these commands."""
        return self.parse(text) is not None

    def parse(self, text: str) -> Invocation | None:
        """The command ``text`` carries, or None: ordinary text for the model (an unknown
        ``/word``, ``/etc/hosts ...``, ``//...``)."""
        found = _INVOCATION.fullmatch(text)
        if found is None:
            return None
        command = self.get(found.group(1))
        if command is None:
            return None
        return Invocation(command, (found.group(2) or "").strip())


def unescaped(text: str) -> str:
    """A message's text as the model gets it: a leading ``//`` is one ``/``."""
    stripped = text.lstrip()
    if stripped.startswith("//"):
        return stripped[1:]
    return text


@dataclass
class CommandContext:
    """What a command's handler works with: the message, its channel, and the home's parts.

    ``parts`` are the composition root's (``conversations``, ``ledger``, ``store``, ``events``,
    ``outbox``, ``usage``, ``approvals``, ``answers``, ``tasks``, ``pending``, ``busy``,
    ``commands``), looked up by attribute; a plugin's command reads what it needs."""

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
        """The channel's current conversation: the one its next message goes to."""
        return self.parts.conversations.current(self.channel)


def collect_commands(app: App) -> CommandRegistry:
    """The commands every plugin registers (``register_message_commands``, at startup)."""
    registry = CommandRegistry()
    plugins = app.plugins

    def register(
        name: str, handler: Handler, help: str, usage: str = "", immediate: bool = False
    ) -> None:
        registry.register(
            name, handler, help, usage=usage, immediate=immediate, plugin=plugins.calling()
        )

    plugins.call_strict("register_message_commands", register=register, app=app)
    return registry
