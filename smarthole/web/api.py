"""The JSON API and the event stream, for the pages' script and for any other client.

Every route needs the token (``Authorization: Bearer TOKEN``, or the pages' cookie); the
shapes are documented in ``docs/web.md``. The reads run in a worker thread, off the event loop.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..attachments import Attachment, BlobStore
from ..attachments.kinds import SHA256
from ..config import AttachmentSettings
from ..db.blobrefs import named_attachment
from ..db.events import Event, EventLog
from ..db.search import MAX_QUERY_CHARS
from ..db.store import Store
from ..errors import ConfigError, LookupFailed
from ..home import Home, holder
from . import posting
from .auth import AUTHENTICATED
from .follower import BATCH, DaemonState, EventFollower, follow
from .reads import TURNS_SHOWN, Reader, RowState, said_dict

MAX_BODY = 4 * 1024 * 1024  # a request body larger than this is refused before it is parsed
THUMBNAIL_EDGE = 240
ATTACHMENT_HEADERS = {
    "x-content-type-options": "nosniff",
    "content-security-policy": "sandbox; default-src 'none'; img-src 'self'",
    "cache-control": "private, max-age=86400",
}


@dataclass
class Api:
    """The JSON side of one home's view."""

    home: Home
    store: Store
    reader: Reader
    events: EventLog
    follower: EventFollower
    max_message_bytes: int

    # -- conversations ----------------------------------------------------------------------

    def conversations(self, request: Request) -> Response:
        page = _int(request, "page", 1)
        listing = self.reader.conversations(page)
        return JSONResponse(
            {
                "conversations": [row.as_dict() for row in listing.rows],
                "page": listing.page,
                "pages": listing.pages,
                "total": listing.total,
            }
        )

    def search(self, request: Request) -> Response:
        """What ``smarthole search --json`` finds for ``q`` (the page's search box's hits)."""
        query = request.query_params.get("q", "")[: MAX_QUERY_CHARS + 1]
        found = self.reader.search(query)
        if found.error is not None:
            return _error(400, found.error)
        return JSONResponse({"query": query, "hits": [hit.as_dict() for hit in found.hits]})

    def conversation(self, request: Request) -> Response:
        try:
            row = self.reader.conversation(request.path_params["id"])
        except LookupFailed as exc:
            return _error(404, str(exc))
        conversation = row.conversation
        last = min(_int(request, "before_turn", conversation.turns + 1) - 1, conversation.turns)
        count = max(1, min(_int(request, "turns", TURNS_SHOWN), 500))
        first = max(1, last - count + 1)
        turns = self.reader.human_turns(conversation, first=first, last=last) if last else []
        waiting_turn = conversation.turns if row.state is RowState.WAITING else None
        messages = []
        for turn in turns:
            questions = [i for i, s in enumerate(turn.said) if s.kind == "question"]
            for index, said in enumerate(turn.said):
                pending = turn.number == waiting_turn and bool(questions) and index == questions[-1]
                messages.append(said_dict(said, pending=pending))
        tasks = self.reader.team_between(conversation, first, last) if last else []
        fork = self.store.fork_of(conversation.id)
        return JSONResponse(
            {
                "conversation": row.as_dict(),
                "forked_from": fork.as_dict() if fork else None,
                "replay_of": fork.replay_of if fork else None,
                "session": self.reader.bar(row).as_dict(),
                "first_turn": first if last else None,
                "last_turn": last or None,
                "earlier": bool(last) and first > 1,
                "messages": messages,
                "tasks": [task.as_dict() for task in tasks],
            }
        )

    # -- tasks ------------------------------------------------------------------------------

    def tasks(self, request: Request) -> Response:
        from ..teams.control import describe

        return JSONResponse(
            {"tasks": [describe(task, done) for task, done in self.reader.task_listing()]}
        )

    def abort(self, request: Request) -> Response:
        try:
            stopped, message = posting.abort(
                self.home, self.store, self.events, self.reader.tasks, request.path_params["id"]
            )
        except posting.Refused as exc:
            return _error(exc.status, exc.reason)
        return JSONResponse(
            {"task": request.path_params["id"], "stopped": stopped, "message": message}
        )

    def channels(self, request: Request) -> Response:
        """Each channel's state, as ``smarthole status`` shows it (``smarthole.channels``)."""
        from ..channels.report import channel_reports

        running = holder(self.home.lock_file) is not None
        return JSONResponse({"channels": channel_reports(self.store, running=running)})

    # -- schedules --------------------------------------------------------------------------

    def schedules(self, request: Request) -> Response:
        from .schedules import schedule_rows

        return JSONResponse({"schedules": schedule_rows(self.reader.schedules)})

    def schedule_action(self, request: Request) -> Response:
        from .schedules import Refused, act

        key, action = request.path_params["id"], request.path_params["action"]
        try:
            message = act(self.reader.schedules, key, action)
        except Refused as exc:
            return _error(exc.status, exc.reason)
        from ..pipeline.watch import wake_daemon

        wake_daemon(self.home.inbox)  # the running daemon looks at once (a run is sent now)
        return JSONResponse({"schedule": key, "action": action, "message": message})

    # -- messages ---------------------------------------------------------------------------

    async def post_message(self, request: Request) -> Response:
        files: list[tuple[str, bytes]] = []
        limits = None
        if _media_type(request) == "multipart/form-data":
            limits = await run_in_threadpool(_attachment_limits, self.home)
            form = await _form_body(request, limits)
            if isinstance(form, Response):
                return form
            body, files = form
        else:
            body = await _json_body(request)
        if isinstance(body, Response):
            return body
        try:
            dropped = await run_in_threadpool(
                functools.partial(
                    posting.drop,
                    self.home,
                    body,
                    max_bytes=self.max_message_bytes,
                    files=files,
                    limits=limits,
                )
            )
        except posting.Refused as exc:
            return _error(exc.status, exc.reason)
        return JSONResponse({"id": dropped.id, "file": dropped.file}, status_code=202)

    # -- approvals --------------------------------------------------------------------------

    def approvals(self, request: Request) -> Response:
        waiting = self.reader.approvals.waiting()
        return JSONResponse({"approvals": [a.as_dict() for a in waiting]})

    async def post_approval(self, request: Request) -> Response:
        body = await _json_body(request)
        if isinstance(body, Response):
            return body
        approval = request.path_params["id"]
        try:
            dropped = await run_in_threadpool(
                posting.answer, self.home, self.reader.approvals, approval, body
            )
        except posting.Refused as exc:
            return _error(exc.status, exc.reason)
        return JSONResponse({"id": dropped.id, "file": dropped.file}, status_code=202)

    # -- attachments ------------------------------------------------------------------------

    def attachment(self, request: Request) -> Response:
        """A blob that a stored message names, with that message's type; inline only for
        images and PDFs, and never run as a page of ours (a sandbox policy)."""
        found = self._named(request)
        if isinstance(found, Response):
            return found
        attachment, data = found
        inline = attachment.kind in ("image", "pdf")
        disposition = "inline" if inline else "attachment"
        return Response(
            data,
            media_type=attachment.media_type if inline else "text/plain; charset=utf-8",
            headers={
                **ATTACHMENT_HEADERS,
                "content-disposition": f"{disposition}; filename*=UTF-8''{quote(attachment.name)}",
            },
        )

    def thumbnail(self, request: Request) -> Response:
        found = self._named(request)
        if isinstance(found, Response):
            return found
        attachment, data = found
        if attachment.kind != "image":
            return _error(404, "only an image has a thumbnail")
        from ..attachments.images import thumbnail

        return Response(
            thumbnail(data, THUMBNAIL_EDGE), media_type="image/png", headers=ATTACHMENT_HEADERS
        )

    def _named(self, request: Request) -> tuple[Attachment, bytes] | Response:
        sha256 = request.path_params["sha256"]
        if not SHA256.fullmatch(sha256):
            return _error(404, "no such attachment")
        block = named_attachment(self.store, sha256)
        if block is None:
            return _error(404, "no such attachment")
        try:
            return Attachment.from_dict(block), BlobStore(self.home.blobs).read(sha256)
        except (ValueError, FileNotFoundError):
            return _error(404, "that attachment is no longer stored")

    # -- events -----------------------------------------------------------------------------

    def events_since(self, request: Request) -> Response:
        after = _int(request, "after", 0)
        limit = max(1, min(_int(request, "limit", BATCH), BATCH))
        found = self.events.since(after, limit=limit)
        last = found[-1].id if found else after
        return JSONResponse({"events": [e.as_dict() for e in found], "last_id": last})

    async def _read_since(self, after: int, limit: int) -> list[Event]:
        return await run_in_threadpool(self.events.since, after, limit=limit)

    def _after(self, request: Request | WebSocket) -> int:
        """Where a stream resumes: ``?after=``, or the ``Last-Event-ID`` an EventSource sends
        when it reconnects by itself, whichever is later."""
        after = _int(request, "after", 0)
        header = request.headers.get("last-event-id", "")
        return max(after, int(header)) if header.isdigit() else after

    async def stream(self, request: Request) -> Response:
        """Server-sent events: ``id:`` is the event id, ``data:`` its JSON; ``event: daemon``
        says whether a daemon runs. A comment line every few seconds keeps it open."""
        items = follow(self.follower, self._read_since, self._after(request))
        return StreamingResponse(
            _sse(items),
            media_type="text/event-stream",
            headers={"x-accel-buffering": "no"},
        )

    async def socket(self, websocket: WebSocket) -> None:
        """The same stream over a WebSocket, which the pages use: a browser opens at most six
        HTTP connections to one host, and every open page would hold one for its stream."""
        if not websocket.scope.get(AUTHENTICATED):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        items = follow(self.follower, self._read_since, self._after(websocket))
        try:
            async for item in items:
                await websocket.send_text(_frame(item))
        except (WebSocketDisconnect, OSError, RuntimeError):
            return  # the page went away
        finally:
            await items.aclose()  # type: ignore[attr-defined]
        with contextlib.suppress(Exception):  # the server stops: say so, if it still listens
            await websocket.close(code=1001)


def _frame(item: Event | DaemonState | None) -> str:
    if item is None:
        return '{"type":"keepalive"}'
    if isinstance(item, DaemonState):
        return json.dumps({"type": "daemon", "running": item.running})
    return json.dumps({"type": "event", "event": item.as_dict()}, default=str)


async def _sse(items: AsyncIterator[Event | DaemonState | None]) -> AsyncIterator[str]:
    yield "retry: 1000\n\n"
    async for item in items:
        if item is None:
            yield ": keepalive\n\n"
        elif isinstance(item, DaemonState):
            yield f"event: daemon\ndata: {json.dumps({'running': item.running})}\n\n"
        else:
            yield f"id: {item.id}\ndata: {json.dumps(item.as_dict(), default=str)}\n\n"


def _int(request: Request | WebSocket, name: str, default: int) -> int:
    value = request.query_params.get(name, "")
    try:
        return int(value) if value else default
    except ValueError:
        return default


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _attachment_limits(home: Home) -> AttachmentSettings:
    """The home's ``[attachments]`` limits, read at each upload (a reload applies)."""
    from ..config import load_config

    try:
        return load_config(home).attachments
    except ConfigError:
        return AttachmentSettings()


FORM_FIELDS = ("text", "conversation", "channel", "new_conversation")


async def _form_body(
    request: Request, limits: AttachmentSettings
) -> tuple[dict[str, Any], list[tuple[str, bytes]]] | Response:
    """A ``multipart/form-data`` message: its fields, and its ``file`` parts as attachments."""
    largest = limits.max_message_bytes + MAX_BODY
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > largest:
        return _error(413, f"the request body is over {largest} bytes")
    try:
        form = await request.form(
            max_files=limits.max_count + 1,
            max_fields=len(FORM_FIELDS) + 1,
            max_part_size=MAX_BODY,
        )
    except HTTPException as exc:
        return _error(exc.status_code, str(exc.detail))
    try:
        body: dict[str, Any] = {}
        files = []
        for key, value in form.multi_items():
            if isinstance(value, str):
                if key not in FORM_FIELDS:
                    return _error(400, f"unknown field {key!r}")
                body[key] = value == "true" if key == "new_conversation" else value
            elif key == "file":
                files.append((value.filename or "attachment", await value.read()))
            else:
                return _error(400, f"unknown file field {key!r}; send files as 'file'")
        body.setdefault("text", "")
        return body, files
    finally:
        await form.close()


def _media_type(request: Request) -> str:
    """The request's media type, without its parameters (``; charset=...``)."""
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _json_body(request: Request) -> Any:
    # Exactly application/json: another site can send text/plain (even "text/plain;
    # application/json") without a CORS preflight, never application/json.
    if _media_type(request) != "application/json":
        return _error(415, "send the message as application/json")
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > MAX_BODY:
        return _error(413, f"the request body is over {MAX_BODY} bytes")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return _error(413, f"the request body is over {MAX_BODY} bytes")
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _error(400, "the body is not valid JSON")
