"""Serving the view with uvicorn: in the foreground (``smarthole web``) or in a thread of the
daemon (``smarthole run`` with ``[web] enabled``). The only module that imports ``uvicorn``.

The socket is bound before anything is printed, so the link works the moment it is shown, and
``port = 0`` (a free port) gives a real one.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import webbrowser
from dataclasses import dataclass
from typing import TextIO

import uvicorn

from ..daemon.runtime import Runtime
from ..errors import SmartholeError
from ..home import Home
from .app import DEFAULT_MAX_MESSAGE_BYTES, create_app
from .follower import EventFollower
from .settings import WebSettings, base_url, ensure_token, is_loopback, link

GRACE_SECONDS = 3  # open streams get this long to end when the server stops
START_TIMEOUT = 20.0


class WebError(SmartholeError):
    """The view could not be served (the address is in use, or cannot be bound)."""


class _Server(uvicorn.Server):
    """uvicorn's server, ending every event stream as shutdown begins (else it would wait
    for each open page to go away)."""

    def __init__(self, config: uvicorn.Config, follower: EventFollower) -> None:
        super().__init__(config)
        self.follower = follower

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.follower.close()
        await super().shutdown(sockets)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; ``WebError`` says why not."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as exc:
        raise WebError(f"cannot listen on {base_url(host, port)}: {exc.strerror or exc}") from exc


def _server(
    home: Home,
    sock: socket.socket,
    host: str,
    token: str,
    max_message_bytes: int,
    root: Runtime | None = None,
) -> _Server:
    port = sock.getsockname()[1]
    app = create_app(
        home, token=token, host=host, port=port, max_message_bytes=max_message_bytes, root=root
    )
    config = uvicorn.Config(
        app,
        log_config=None,  # the process's logging is its owner's, not uvicorn's
        log_level="warning",
        access_log=False,
        lifespan="on",
        ws="websockets-sansio",
        timeout_graceful_shutdown=GRACE_SECONDS,
        server_header=False,
    )
    return _Server(config, app.state.follower)


def serve(
    home: Home,
    host: str,
    port: int,
    *,
    open_browser: bool = False,
    new_token: bool = False,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> None:
    """Serve the view of ``home`` until interrupted. The first line on ``out`` is
    ``Open http://HOST:PORT/?token=TOKEN``."""
    out = out or sys.stdout
    err = err or sys.stderr
    token = ensure_token(home, new=new_token)
    sock = bind(host, port)
    try:
        server = _server(home, sock, host, token, max_message_bytes)
        url = link(host, sock.getsockname()[1], token)
        if not is_loopback(host):
            err.write(
                f"warning: listening on {host}, not only on this machine: anyone who can reach "
                "it and has the link can make the agent act; use --host 127.0.0.1 unless you "
                "mean it\n"
            )
            err.flush()
        out.write(f"Open {url}\n")
        out.flush()
        if open_browser:
            webbrowser.open(url)
        server.run(sockets=[sock])
    finally:
        sock.close()


@dataclass
class WebHandle:
    """The view running in a thread: its address (``url``, no token; ``link``, with it)."""

    url: str
    link: str
    server: _Server
    thread: threading.Thread
    sock: socket.socket

    def stop(self, timeout: float = GRACE_SECONDS + 5) -> None:
        self.server.should_exit = True
        self.server.follower.close()
        self.thread.join(timeout)
        self.sock.close()


def start_in_thread(
    home: Home,
    settings: WebSettings,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    root: Runtime | None = None,
) -> WebHandle:
    """Serve the view from a thread of this process (for ``smarthole run``, over its daemon's
    ``root``); the caller owns the handle and calls ``stop()``. Raises ``WebError`` if it
    cannot start."""
    token = ensure_token(home)
    sock = bind(settings.host, settings.port)
    try:
        server = _server(home, sock, settings.host, token, max_message_bytes, root)
    except BaseException:
        sock.close()
        raise
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="smarthole-web", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(GRACE_SECONDS)
            sock.close()
            raise WebError(
                f"the web view did not start on {base_url(settings.host, settings.port)}"
            )
        time.sleep(0.01)
    port = sock.getsockname()[1]
    return WebHandle(
        base_url(settings.host, port), link(settings.host, port, token), server, thread, sock
    )
