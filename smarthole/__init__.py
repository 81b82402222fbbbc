"""smarthole: drop a file in a folder, get an answer from a Claude agent.

This is the face plugin authors use: the ``hookimpl`` marker and the values hooks and tools
receive. Everything else in the package is internal and may change.
"""

from __future__ import annotations

from .db.events import Event
from .db.outbox import OutboxItem
from .db.records import Conversation, Message, StoredMessage
from .errors import PathError, SmartholeError, ToolError
from .hookspecs import CommandContext, CommandReply, Deny, PluginApp, ToolCall, hookimpl
from .tools import ToolContext, ToolResult

__version__ = "0.1.0"

__all__ = [
    "CommandContext",
    "CommandReply",
    "Conversation",
    "Deny",
    "Event",
    "Message",
    "OutboxItem",
    "PathError",
    "PluginApp",
    "SmartholeError",
    "StoredMessage",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "__version__",
    "hookimpl",
]
