"""``python -m smarthole.testing``: a fake model to try the daemon by hand (docs/fake.md)."""

from __future__ import annotations

import argparse
import contextlib
import threading

from .script import scripted
from .server import FakeMessagesAPI


def main(argv: list[str] | None = None) -> int:
    """Serve the scripted fake until Ctrl-C; the first line printed is the server's URL.

    It echoes a message, and acts on a ``/fake`` command (:mod:`smarthole.testing.script`)."""
    parser = argparse.ArgumentParser(
        prog="python -m smarthole.testing",
        description="A fake Messages API: it echoes, and acts on /fake commands (docs/fake.md).",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any)")
    args = parser.parse_args(argv)
    with FakeMessagesAPI(port=args.port, default=scripted) as fake:
        print(fake.url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
