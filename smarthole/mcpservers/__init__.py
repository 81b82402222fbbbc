"""MCP servers as tool sources: every tool of a configured server, in the agent's hands.

``config`` (``[mcp.servers.<name>]``) says which servers; :class:`McpServers` starts and
supervises them; ``client`` is the only module that imports the ``mcp`` SDK, on its own event
loop thread; ``names`` and ``results`` map names and results to what the Messages API takes.
"""

from .manager import McpServers, recorded_views
from .names import exposed_name, tool_matches
from .servers import ServerState

__all__ = ["McpServers", "ServerState", "exposed_name", "recorded_views", "tool_matches"]
