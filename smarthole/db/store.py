"""The store of one home: the database connection and every table family, in one object.

Each table family has its own module (``conversations``, ``messages``, ``ledger``, ``outbox``,
``events``, ``plugindata``); :class:`Store` joins the ones every layer needs.
"""

from __future__ import annotations

from .conversations import ConversationTables
from .forking import ForkTables
from .messages import MessageTables
from .plugindata import PluginData


class Store(ConversationTables, MessageTables, ForkTables):
    """The database of one home: conversations, turns, messages, tool calls and plugin data."""

    def plugin_data(self, plugin: str) -> PluginData:
        return PluginData(self, plugin)
