"""``python -m smarthole.testing``: an echo model to try the daemon by hand."""

from __future__ import annotations

import argparse
import contextlib
import threading

from .replies import echo
from .server import FakeMessagesAPI


def main(argv: list[str] | None = None) -> int:
    """Serve an echo model until Ctrl-C; the first line printed is the server's URL."""
    parser = argparse.ArgumentParser(
        prog="python -m smarthole.testing", description="A fake Messages API that echoes."
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any)")
    args = parser.parse_args(argv)
    with FakeMessagesAPI(port=args.port, default=echo()) as fake:
        print(fake.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
