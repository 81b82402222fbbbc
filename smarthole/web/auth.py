"""Who may use the view: the holder of the token, on this machine's own address, from its pages.

:class:`Gate` is ASGI middleware in front of everything (pages, the API, the event stream, the
static files), so a route added without a check is still closed:

- the ``Host`` header must name the bound address or ``localhost`` (a DNS rebinding page
  reaches us under its own name, and is refused: 400);
- ``?token=`` on any URL, if right, becomes an HttpOnly, SameSite=Strict cookie and a redirect
  to the same URL without it (so the token leaves the address bar and the history);
- every other request needs the cookie or ``Authorization: Bearer TOKEN`` (401 otherwise),
  compared in constant time;
- a state-changing request, or a WebSocket, whose ``Origin`` is not our own is refused (403);
- every response carries a Content-Security-Policy that allows no inline script, and asks not
  to be cached, framed or sniffed.

:func:`reads` and :func:`writes` mark each route with what it needs, beside the route itself.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
AUTHENTICATED = "smarthole.authenticated"
COOKIE_MAX_AGE = 400 * 24 * 3600  # the longest browsers keep a cookie
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
NO_TOKEN = "This page needs the link that `smarthole web` printed (it holds the token)."


def cookie_name(port: int) -> str:
    """Cookies ignore ports: two homes served on two ports of one host need two names."""
    return f"smarthole_token_{port}"


def host_checker(bound: str) -> Callable[[str], bool]:
    """Whether a ``Host`` header's name is one we answer to: the bound address or
    ``localhost``; bound to every address, any IP address (a rebinding attack needs a name)."""
    bound_name = bound.strip("[]").lower()
    try:
        wildcard = ipaddress.ip_address(bound_name).is_unspecified
    except ValueError:
        wildcard = False

    def allowed(header: str) -> bool:
        name = host_name(header)
        if name in (bound_name, "localhost"):
            return True
        if wildcard:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                return False
            return True
        return False

    return allowed


def host_name(header: str) -> str:
    """The name of a ``Host`` header, without its port (an IPv6 address without brackets)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Gate:
    """The middleware that lets only the token's holder in (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str,
        cookie: str,
        host_allowed: Callable[[str], bool],
    ) -> None:
        self.app = app
        self.token = token.encode()
        self.cookie = cookie
        self.host_allowed = host_allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            else:
                await refusal(scope, receive, _with_headers(send))
            return
        scope[AUTHENTICATED] = True
        wrapped = send if scope["type"] == "websocket" else _with_headers(send)
        await self.app(scope, receive, wrapped)

    def _refusal(self, scope: Scope, headers: Headers) -> Response | None:
        host = headers.get("host", "")
        if not self.host_allowed(host):
            return PlainTextResponse("Invalid host header", status_code=400)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and scope["type"] == "http":
            return self._exchange(scope, query)
        if not self._holds_token(headers):
            return _unauthorized(scope)
        method = scope.get("method", "GET")
        if scope["type"] == "websocket" or method not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and origin != f"http://{host}":
                return PlainTextResponse("Cross-origin request refused", status_code=403)
        return None

    def _holds_token(self, headers: Headers) -> bool:
        authorization = headers.get("authorization", "")
        scheme, _, credential = authorization.partition(" ")
        if scheme.lower() == "bearer" and self._matches(credential.strip()):
            return True
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get("cookie", ""))
        except Exception:  # a malformed Cookie header holds no token
            return False
        morsel = cookies.get(self.cookie)
        return morsel is not None and self._matches(morsel.value)

    def _matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token)

    def _exchange(self, scope: Scope, query: dict[str, str]) -> Response:
        """``?token=``: set the cookie and send the browser to the URL without it."""
        if not self._matches(query.pop("token")):
            return _unauthorized(scope)
        rest = urlencode(query)
        location = scope.get("path", "/") + (f"?{rest}" if rest else "")
        response = RedirectResponse(location, status_code=303)
        response.set_cookie(
            self.cookie,
            self.token.decode(),
            max_age=COOKIE_MAX_AGE,
            path="/",
            httponly=True,
            samesite="strict",
        )
        return response


def _unauthorized(scope: Scope) -> Response:
    if scope.get("path", "").startswith("/api/"):
        return JSONResponse({"error": "a valid token is needed"}, status_code=401)
    return PlainTextResponse(NO_TOKEN, status_code=401)


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in HEADERS.items():
                if name not in headers:
                    headers[name] = value
        await send(message)

    return sending


Endpoint = Callable[[Request], Awaitable[Response]]


def reads(endpoint: Endpoint) -> Endpoint:
    """A route that shows data: it needs the token."""

    @functools.wraps(endpoint)
    async def checked(request: Request) -> Response:
        _need_token(request)
        return await endpoint(request)

    return checked


def writes(endpoint: Endpoint) -> Endpoint:
    """A route that changes something (drops a message, aborts a task): it needs the token,
    and a request from one of our own pages or from no page at all (a script)."""

    @functools.wraps(endpoint)
    async def checked(request: Request) -> Response:
        _need_token(request)
        origin = request.headers.get("origin")
        if origin is not None and origin != f"http://{request.headers.get('host', '')}":
            raise HTTPException(403, "cross-origin request refused")
        return await endpoint(request)

    return checked


def _need_token(request: Any) -> None:
    if not request.scope.get(AUTHENTICATED):
        raise HTTPException(401, "a valid token is needed")
