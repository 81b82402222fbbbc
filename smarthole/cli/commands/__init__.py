"""Every command of ``smarthole``, declared beside its handler, one module per topic.

Each module's ``register(commands)`` adds its commands; the order of :data:`MODULES` is the
order of ``smarthole --help``. These modules are imported to build the parser, for every
command and for ``--help``, so a handler imports what it needs (the store, the daemon, the
model client, the ``cli`` module that does its work) when it runs. Installed plugins add
their commands after these (:func:`add_plugin_commands`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from types import ModuleType

from ...errors import ExitCode, PluginError
from ..parser import Commands, Handler, Parser
from . import (
    approvals,
    basics,
    conversations,
    forking,
    inspection,
    mcp,
    memory,
    operations,
    schedules,
    spending,
    teams,
    tidying,
    web,
)

MODULES: tuple[ModuleType, ...] = (
    basics,
    operations,
    conversations,
    forking,
    teams,
    approvals,
    schedules,
    memory,
    spending,
    tidying,
    inspection,
    mcp,
    web,
)

PluginHandler = Callable[[argparse.Namespace], int | None]


def register_all(commands: Commands) -> None:
    for module in MODULES:
        module.register(commands)


def add_plugin_commands(commands: Commands) -> None:
    """The commands of installed plugins; a ``PluginError`` names one that failed."""
    from ...plugins import load_installed_plugins

    plugins = load_installed_plugins()
    if not plugins.listens("register_commands"):
        return

    def register(
        name: str, handler: PluginHandler, help: str, aliases: Sequence[str] = ()
    ) -> Parser:
        taken = sorted({name, *aliases} & commands.names())
        if taken:
            raise PluginError(
                f"plugin {plugins.calling()!r} adds the command {taken[0]!r}, which is taken"
            )
        return commands.command(name, _returning_a_code(handler), help, aliases=aliases)

    plugins.call_strict("register_commands", register=register)


def _returning_a_code(handler: PluginHandler) -> Handler:
    """A plugin's handler may return nothing for success."""

    def run(args: argparse.Namespace) -> int:
        code = handler(args)
        return ExitCode.OK if code is None else code

    return run
