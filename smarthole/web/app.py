"""The app factory: one home's view as an ASGI app, every route beside what it needs.

:func:`create_app` builds it; whoever serves it (``smarthole web``, or ``smarthole run`` with
``[web] enabled``) runs its lifespan, which starts the events follower and closes the store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from ..daemon.runtime import Runtime
from ..db.search import MAX_QUERY_CHARS
from ..home import Home, holder
from .api import Api
from .auth import Gate, cookie_name, host_checker, reads, writes
from .follower import POLL_SECONDS, EventFollower
from .forks import ForkAction
from .memory import MemoryPage
from .pages import NotFound, Pages, environment
from .reads import Reader
from .settings import DEFAULT_HOST, DEFAULT_PORT

STATIC = Path(__file__).parent / "static"
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024


def create_app(
    home: Home,
    *,
    token: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    poll_seconds: float = POLL_SECONDS,
    root: Runtime | None = None,
) -> Starlette:
    """The view of ``home`` for the holder of ``token``, answering to ``host`` (and
    ``localhost``); ``port`` names its cookie. ``app.state.follower`` is its events follower.

    ``root`` is the process's composition root when it has one (``smarthole run``'s daemon):
    the view reads through it, and a process never opens its store twice. Without one (``smarthole
    web``, its own process) the view builds its own root and closes it with its lifespan."""
    home.ensure()
    own_root = root is None
    root = root or Runtime.for_home(home)
    store, events = root.store, root.events
    reader = Reader(store, root.tasks, root.pending, root.search, root.approvals, root.schedules)

    def daemon_running() -> bool:
        return holder(home.lock_file) is not None

    follower = EventFollower(events, daemon_running=daemon_running, interval=poll_seconds)
    pages = Pages(reader, events, environment(), daemon_running)
    memory = MemoryPage(root.memory, events, pages.env)
    api = Api(home, store, reader, events, follower, max_message_bytes)
    forks = ForkAction(home, store, root.conversations, events)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        follower.start(asyncio.get_running_loop())
        try:
            yield
        finally:
            follower.close()
            if own_root:
                root.close()

    app = Starlette(
        routes=routes(pages, api, forks, memory),
        middleware=[
            Middleware(
                Gate,
                token=token,
                cookie=cookie_name(port),
                host_allowed=host_checker(host),
            )
        ],
        exception_handlers={HTTPException: _http_error, NotFound: _not_found},
        lifespan=lifespan,
    )
    app.state.follower = follower
    return app


def routes(
    pages: Pages, api: Api, forks: ForkAction, memory: MemoryPage | None = None
) -> list[BaseRoute]:
    """Every route, with what it needs: ``reads`` (the token) or ``writes`` (the token, from
    our own origin). The Gate middleware in front of them refuses anything else anyway."""

    def conversation(r: Request) -> str:
        return pages.conversation(r.path_params["id"], _turn(r))

    def live(r: Request) -> dict[str, Any]:
        return pages.live(r.path_params["id"], _int(r, "from_turn", 1), _turn(r))

    def earlier(r: Request) -> dict[str, Any]:
        return pages.earlier(r.path_params["id"], _int(r, "before", 1))

    def new(r: Request) -> str:
        return pages.new_conversation(r.query_params.get("channel"))

    def listing(r: Request) -> dict[str, Any]:
        return pages.conversations_fragment(_int(r, "page", 1))

    return [
        # pages
        Route("/", reads(_html(lambda r: pages.conversations(_int(r, "page", 1), _q(r))))),
        Route("/new", reads(_html(new))),
        Route("/c/{id}", reads(_html(conversation))),
        Route("/tasks", reads(_html(lambda r: pages.tasks()))),
        Route("/schedules", reads(_html(lambda r: pages.schedules()))),
        Route("/channels", reads(_html(lambda r: pages.channels()))),
        *(
            [
                Route("/memory", reads(_html(memory.page))),
                Route("/memory/delete", writes(memory.delete), methods=["POST"]),
            ]
            if memory is not None
            else []
        ),
        # fragments that the pages' script swaps in
        Route("/fragments/conversations", reads(_json(listing))),
        Route("/fragments/tasks", reads(_json(lambda r: pages.tasks_fragment()))),
        Route("/fragments/schedules", reads(_json(lambda r: pages.schedules_fragment()))),
        Route("/fragments/channels", reads(_json(lambda r: pages.channels_fragment()))),
        Route("/c/{id}/live", reads(_json(live))),
        Route("/c/{id}/earlier", reads(_json(earlier))),
        # the JSON API
        Route("/api/conversations", reads(_sync(api.conversations))),
        Route("/api/conversations/{id}", reads(_sync(api.conversation))),
        Route("/api/search", reads(_sync(api.search))),
        Route("/api/tasks", reads(_sync(api.tasks))),
        Route("/api/tasks/{id}/abort", writes(_sync(api.abort)), methods=["POST"]),
        Route("/api/schedules", reads(_sync(api.schedules))),
        Route("/api/channels", reads(_sync(api.channels))),
        Route("/api/schedules/{id}/{action}", writes(_sync(api.schedule_action)), methods=["POST"]),
        Route("/api/messages", writes(api.post_message), methods=["POST"]),
        Route("/api/conversations/{id}/fork", writes(forks.post), methods=["POST"]),
        Route("/api/approvals", reads(_sync(api.approvals))),
        Route("/api/approvals/{id}", writes(api.post_approval), methods=["POST"]),
        Route("/api/events", reads(_sync(api.events_since))),
        # attachments: a blob only through a stored message that names it
        Route("/attachments/{sha256}", reads(_sync(api.attachment))),
        Route("/attachments/{sha256}/thumb", reads(_sync(api.thumbnail))),
        Route("/api/events/stream", reads(api.stream)),
        WebSocketRoute("/api/events/socket", api.socket),  # the Gate checks token and Origin
        # the app's own files, and nothing else on disk
        Mount("/static", app=StaticFiles(directory=STATIC, follow_symlink=False), name="static"),
    ]  # fmt: skip


Handler = Callable[[Request], Any]


def _sync(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
    """A handler that reads the store, run in a worker thread."""

    async def run(request: Request) -> Response:
        return await run_in_threadpool(handler, request)

    return run


def _html(render: Callable[[Request], str]) -> Callable[[Request], Any]:
    return _sync(lambda request: HTMLResponse(render(request)))


def _json(build: Callable[[Request], dict[str, Any]]) -> Callable[[Request], Any]:
    return _sync(lambda request: JSONResponse(build(request)))


def _int(request: Request, name: str, default: int) -> int:
    value = request.query_params.get(name, "")
    return int(value) if value.isdigit() else default


def _q(request: Request) -> str:
    """The search query of a list page (the search box's ``q``), bounded like any query."""
    return request.query_params.get("q", "")[: MAX_QUERY_CHARS + 1]


def _turn(request: Request) -> int | None:
    value = request.query_params.get("turn", "")
    return int(value) if value.isdigit() else None


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    return PlainTextResponse(exc.detail, status_code=exc.status_code)


async def _not_found(request: Request, exc: Exception) -> Response:
    path = request.url.path
    if path.startswith("/api/") or path.endswith(("/live", "/earlier")):
        return JSONResponse({"error": str(exc)}, status_code=404)
    return PlainTextResponse(str(exc), status_code=404)
