"""``web``: the live web view of a home (``smarthole.web``, the ``web`` extra)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from ..parser import Commands

if TYPE_CHECKING:
    from ...config import Config
    from ...daemon.runtime import Runtime
    from ...home import Home
    from ...web.server import WebHandle


def register(commands: Commands) -> None:
    from ...web import command as web  # its flags; the web stack is imported only by run

    parser = commands.command("web", run, web.HELP)
    parser.description = web.DESCRIPTION
    web.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ...web.command import run as serve

    return serve(args)


def serve_beside_daemon(
    home: Home, config: Config
) -> Callable[[Runtime], AbstractContextManager[WebHandle]] | None:
    """``[web] enabled``: what serves the view from this process, over the daemon's own root,
    while ``run`` runs the daemon (printing its link, with the token in it); None when the
    table does not ask for it."""
    if not config.web.enabled:
        return None

    @contextlib.contextmanager
    def serving(root: Runtime) -> Iterator[WebHandle]:
        from ...web.server import start_in_thread
        from ...web.settings import WebSettings, is_loopback

        settings = WebSettings(True, config.web.host, config.web.port)
        handle = start_in_thread(
            home, settings, max_message_bytes=config.inbox.max_message_bytes, root=root
        )
        print(f"Open {handle.link}", flush=True)
        if not is_loopback(config.web.host):
            print(
                f"smarthole: warning: the web view listens on {config.web.host}, not this "
                "machine only; anyone who has the link can make the agent act",
                file=sys.stderr,
            )
        try:
            yield handle
        finally:
            handle.stop()

    return serving
