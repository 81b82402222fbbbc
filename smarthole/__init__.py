"""smarthole: drop a file in a folder, get an answer from a Claude agent.

This is the face plugin authors use: the ``hookimpl`` marker and the values hooks and tools
receive. Everything else in the package is internal and may change.
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

hookimpl = pluggy.HookimplMarker("smarthole")
"""Marker for plugin hook implementations: ``@hookimpl def startup(app): ...``."""

# The values are imported after ``hookimpl`` exists: the built-in plugins import it from here.
from .db.events import Event  # noqa: E402
from .db.outbox import OutboxItem  # noqa: E402
from .db.records import Conversation, Message, StoredMessage  # noqa: E402
from .errors import PathError, SmartholeError, ToolError  # noqa: E402
from .hookspecs import PluginApp  # noqa: E402
from .tools import ToolContext, ToolResult  # noqa: E402

__all__ = [
    "Conversation",
    "Event",
    "Message",
    "OutboxItem",
    "PathError",
    "PluginApp",
    "SmartholeError",
    "StoredMessage",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "__version__",
    "hookimpl",
]
