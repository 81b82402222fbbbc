"""The web view's "Fork from here": ``POST /api/conversations/{id}/fork`` with ``{"turn": N}``.

It makes the fork ``smarthole fork ID --turn N`` makes (``pipeline.forking.fork``): the new
conversation becomes its channel's current one, and the page moves to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from ..errors import LookupFailed, UsageError
from ..pipeline.forking import fork, home_read_only
from .api import _error, _json_body

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..conversations import Conversations
    from ..db.events import EventLog
    from ..db.store import Store
    from ..home import Home


class ForkAction:
    """Forks a conversation at a turn for the page (its parts come from ``create_app``)."""

    def __init__(
        self, home: Home, store: Store, conversations: Conversations, events: EventLog
    ) -> None:
        self.home = home
        self.store = store
        self.conversations = conversations
        self.events = events

    async def post(self, request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        turn = body.get("turn") if isinstance(body, dict) else None
        if not isinstance(turn, int) or isinstance(turn, bool) or turn < 1:
            return _error(400, 'send {"turn": N}, N a turn of the conversation')
        try:
            made = await run_in_threadpool(self._fork, request.path_params["id"], turn)
        except LookupFailed as exc:
            return _error(404, str(exc))
        except UsageError as exc:
            return _error(409, str(exc))
        return JSONResponse(made, status_code=201)

    def _fork(self, wanted: str, turn: int) -> dict[str, Any]:
        forked = fork(
            self.store,
            self.conversations,
            self.events,
            wanted,
            turn=turn,
            read_only=home_read_only(self.home),
        )
        made = self.store.fork_of(forked.id)
        return {"conversation": forked.id, "forked_from": made.as_dict() if made else None}
