"""``smarthole web``: its flags and what it does. The CLI registers it as a subcommand.

Building the parser imports nothing of the web stack; :func:`run` does, when it runs.
"""

from __future__ import annotations

import argparse

from .settings import DEFAULT_HOST, DEFAULT_PORT

HELP = "serve the live web view of this home (needs the `web` extra)"
DESCRIPTION = (
    "Serve a live web view of this home's conversations, its team tasks and their agents' "
    "work, for the browser on this machine. Prints the link to open (it holds the access "
    "token) as its first line. Works whether or not the daemon runs: messages sent from the "
    "page wait in the inbox."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only)",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)"
    )
    parser.add_argument("--open", action="store_true", help="open the link in a browser")
    parser.add_argument(
        "--new-token",
        action="store_true",
        help="replace the access token (links and pages opened with the old one stop working)",
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; 0 after a clean stop. Errors are raised for the CLI to print."""
    from ..config import load_config
    from ..errors import ConfigError
    from ..home import Home

    home = Home.resolve(getattr(args, "home", None))
    if not home.root.is_dir():
        raise ConfigError(
            f"no smarthole home at {home.root}; run `smarthole init --home {home.root}` first"
        )
    try:
        from .server import serve
    except ImportError as exc:
        raise ConfigError(
            f"the web view needs the `web` extra ({exc.name} is missing): "
            "pip install 'smarthole[web]'"
        ) from exc
    config = load_config(home)
    serve(
        home,
        args.host,
        args.port,
        open_browser=args.open,
        new_token=args.new_token,
        max_message_bytes=config.inbox.max_message_bytes,
    )
    return 0
