"""Running the real daemon in a test: drop a message into a home, answer everything, return."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def drop_message(home: Path, text: str, *, message_id: str, **fields: Any) -> Path:
    """Write a message into ``home``'s inbox the way a well-behaved writer does (then rename).

    ``fields`` are the front matter keys of an inbox file: ``channel``, ``conversation``,
    ``new_conversation``, ``timestamp``, ``metadata``.
    """
    from ..pipeline.inbox import drop_message as drop

    return drop(Path(home) / "inbox", text, message_id=message_id, **fields)


def run_once(
    home: Path, *, env: Mapping[str, str], plugins: Iterable[tuple[str, object]] = ()
) -> None:
    """Run the daemon on ``home`` until nothing is left to do (``smarthole run --once``).

    ``env`` must point the daemon at the fake (``ANTHROPIC_BASE_URL``, ``ANTHROPIC_API_KEY``);
    ``plugins`` are ``(name, plugin)`` pairs loaded after the others, such as the plugin under
    test. The home is created if it does not exist.
    """
    from ..daemon import Daemon
    from ..home import Home

    Daemon(
        Home(Path(home)), once=True, env=env, extra_plugins=list(plugins), handle_signals=False
    ).run()
