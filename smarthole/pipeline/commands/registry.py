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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import PluginError
from ...hookspecs import CommandContext, CommandReply

if TYPE_CHECKING:
    from ...app import App

COMMAND_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# ``/name`` at the start (after any white space), then white space or the end.
_INVOCATION = re.compile(r"\s*/([A-Za-z][A-Za-z0-9_-]{0,31})(?:\s+(.*))?", re.DOTALL)


Handler = Callable[[CommandContext], "CommandReply | str"]


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


def collect_commands(
    app: App, registry: CommandRegistry | None = None, *, only: list[str] | None = None
) -> CommandRegistry:
    """The commands every plugin registers (``register_message_commands``, at startup), or
    with ``only`` those of the plugins named (loaded by a reload), added to ``registry``."""
    registry = CommandRegistry() if registry is None else registry
    plugins = app.plugins

    def register(
        name: str, handler: Handler, help: str, usage: str = "", immediate: bool = False
    ) -> None:
        registry.register(
            name, handler, help, usage=usage, immediate=immediate, plugin=plugins.calling()
        )

    if only is None:
        plugins.call_strict("register_message_commands", register=register, app=app)
    else:
        plugins.call_strict_for(only, "register_message_commands", register=register, app=app)
    return registry
