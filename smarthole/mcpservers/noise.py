"""Lines a stdio server prints on its stdout that are not JSON-RPC: a few warnings, then a count.

Many servers print a banner or debug output on stdout. The SDK skips such a line, logs it with
a traceback (``logger.exception`` in ``mcp.client.stdio``, one ERROR per line, no server named)
and hands the parse error to the session's ``message_handler``. That hand-over is public API
(SDK 1.x did it too) and the handler knows its server, so the report is made there
(:class:`StrayLines`), and :func:`quiet_sdk_parse_errors` drops the SDK's record, which only
says less. Should a future SDK log from elsewhere, its traceback comes back (a test notices);
the warnings stay.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import math
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

LIMIT = 5  # warnings per window and server; the rest are counted
WINDOW = 60.0  # seconds
SHOWN_CHARACTERS = 120
SDK_STDIO_LOGGER = "mcp.client.stdio"

# Set in the task that runs a stdio connection; the SDK's reader task inherits it, which
# tells the filter that the record is about one of our servers (a plugin may use the SDK too).
reading_stdio: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "smarthole_mcp_reading_stdio", default=False
)

Schedule = Callable[[float, Callable[[], None]], Any]


class StrayLines:
    """One server's stray stdout lines: :data:`LIMIT` warnings per :data:`WINDOW`, then a count.

    The count is logged when the window ends (``schedule``, the running event loop's
    ``call_later`` by default) or at :meth:`flush` (the connection ended), whichever is first.
    Used on the event loop only, so it needs no lock.
    """

    def __init__(
        self,
        server: str,
        *,
        limit: int = LIMIT,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        schedule: Schedule | None = None,
    ) -> None:
        self.server = server
        self.limit = limit
        self.window = window
        self.clock = clock
        self._schedule = schedule
        self._started: float | None = None  # the current window's start
        self._logged = 0
        self._suppressed = 0
        self._timer: Any = None

    def report(self, line: str) -> None:
        """The server printed ``line``, which is not JSON-RPC: warn, or count it."""
        now = self.clock()
        if self._started is None or now - self._started >= self.window:
            self.flush()
            self._started, self._logged = now, 0
        if self._logged < self.limit:
            self._logged += 1
            last = self._logged == self.limit
            logger.warning(
                "MCP server %s printed a line on stdout that is not JSON-RPC (ignored): %s%s",
                self.server,
                shown(line),
                f"; more in the next {math.ceil(self._left(now)):d} s are counted, not logged"
                if last
                else "",
            )
            return
        self._suppressed += 1
        if self._timer is None:
            self._timer = self._later(self._left(now), self.flush)

    def flush(self) -> None:
        """Log how many lines were not logged, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._suppressed:
            return
        assert self._started is not None
        seconds = min(self.window, self.clock() - self._started)
        logger.warning(
            "MCP server %s: %d more lines on stdout that are not JSON-RPC in the last %d s "
            "were not logged",
            self.server,
            self._suppressed,
            math.ceil(seconds),
        )
        self._suppressed = 0

    def _left(self, now: float) -> float:
        assert self._started is not None
        return max(0.0, self._started + self.window - now)

    def _later(self, delay: float, callback: Callable[[], None]) -> Any:
        if self._schedule is not None:
            return self._schedule(delay, callback)
        return asyncio.get_running_loop().call_later(delay, callback)


def stray_line(error: Exception) -> str:
    """The line behind a parse error, as well as it can be told."""
    # pydantic's ValidationError keeps the input: the line itself, or the JSON it held (valid
    # JSON of another shape). Anything else says what it is.
    errors = getattr(error, "errors", None)
    try:
        value = errors()[0]["input"] if callable(errors) else None
    except Exception:
        value = None
    if isinstance(value, str):
        return value
    if value is not None:
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            return repr(value)
    return f"{type(error).__name__}: {error}"


def shown(line: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``line`` for a log: quoted, control characters escaped, cut at ``limit`` characters."""
    # repr escapes every character str.isprintable refuses (escapes, bells, bidi overrides) and
    # backslashes, so what the server printed can neither drive a terminal nor pass as ours.
    if len(line) <= limit:
        return repr(line)
    return f"{line[:limit]!r}... ({len(line)} characters)"


class _DropOurParseErrors(logging.Filter):
    """Drops the SDK's traceback for a line of one of our servers: :class:`StrayLines` says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, ValueError) and reading_stdio.get())


def quiet_sdk_parse_errors() -> None:
    """Attach the filter to the SDK's stdio logger, once (at the first connection, not import)."""
    sdk = logging.getLogger(SDK_STDIO_LOGGER)
    if not any(isinstance(f, _DropOurParseErrors) for f in sdk.filters):
        sdk.addFilter(_DropOurParseErrors())
