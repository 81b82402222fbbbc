"""Commands inside messages: ``/new``, ``/status``, ``/stop``... answered without the model.

``registry`` holds the commands (the ``register_message_commands`` hook fills it) and reads a
message's text as one; ``runner`` takes each exactly once, its reply an outbox item of kind
``command`` (``runner`` is imported as itself: it stands on the lifecycle, which the busy
policy's module beside it needs too). See ``docs/commands.md``.
"""

from __future__ import annotations

from .registry import (
    CommandContext,
    CommandRegistry,
    CommandReply,
    Invocation,
    MessageCommand,
    collect_commands,
    unescaped,
)

__all__ = [
    "CommandContext",
    "CommandRegistry",
    "CommandReply",
    "Invocation",
    "MessageCommand",
    "collect_commands",
    "unescaped",
]
