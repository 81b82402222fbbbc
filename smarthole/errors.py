"""The one exception hierarchy of smarthole.

Library code raises these; only ``smarthole.cli`` turns them into an :class:`ExitCode` and a
one-line message. Every message names the file, key, plugin or message id involved.

::

    SmartholeError
    ├── ConfigError            config.toml or a plugin's settings are wrong
    ├── PluginError            a plugin cannot be loaded or broke a rule
    ├── MessageError           an inbox file cannot be used (it is set aside in failed/)
    ├── StoreError             the SQLite store cannot be used
    │   └── CorruptStoreError  the database file is not a readable database
    ├── TurnError              a turn failed; says whether a later attempt may succeed
    │   ├── ModelError         a call to the Messages API failed
    │   └── InternalError      a bug (in smarthole or a plugin) broke the turn
    ├── ToolError              a tool failed; the model sees the message as an is_error result
    │   └── PathError          a workspace path broke a confinement rule
    ├── LookupFailed           an id or prefix matched nothing, or more than one thing
    ├── UsageError             a command was asked for something it cannot do as asked
    └── DaemonError            the daemon cannot start
        └── AlreadyRunning     another daemon holds this home's lock
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime


class ExitCode(enum.IntEnum):
    """The exit status of the ``smarthole`` command (pytest's ``ExitCode``).

    Here, beside the errors that decide it, because the daemon's signal handling (below the
    CLI) ends a process with :attr:`INTERRUPTED` too.
    """

    OK = 0
    #: A request that could not be met: an unknown id, a timeout, an error reply.
    FAILED = 1
    #: smarthole cannot run as configured: a bad config or command line, no API key, a broken
    #: plugin, another daemon running.
    USAGE = 2
    #: ``status``: the daemon is not running (the LSB and systemctl convention).
    NOT_RUNNING = 3
    #: Interrupted by Ctrl-C: 128 + SIGINT, as a shell reports it.
    INTERRUPTED = 130
    #: The reader of the output went away (``smarthole events | head``): 128 + SIGPIPE.
    READER_GONE = 141


class SmartholeError(Exception):
    """Base class of every error smarthole raises on purpose."""


class ConfigError(SmartholeError):
    """A configuration file or a plugin's settings table is invalid."""


class PluginError(SmartholeError):
    """A plugin could not be imported, or registered something invalid."""


class DocumentError(SmartholeError):
    """A JSON document from outside (a file to import, a command-line argument) is unusable:
    not JSON, nested too deeply, a number too long to read, or not the shape asked for."""


class MessageError(SmartholeError):
    """An inbox file is unusable; the message says why in one line."""


class StoreError(SmartholeError):
    """The SQLite store failed."""


class CorruptStoreError(StoreError):
    """The database file cannot be opened or read as a SQLite database."""


class TurnError(SmartholeError):
    """A turn failed.

    ``retryable`` says whether a later attempt may succeed; ``retry_after`` is the server's
    requested delay in seconds when it sent one; ``status`` is the HTTP status when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
        kind: str = "error",
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.kind = kind

    @property
    def prompt_too_long(self) -> bool:
        return self.kind == "prompt_too_long"


class ModelError(TurnError):
    """A Messages API call failed."""


class InternalError(TurnError):
    """A bug in smarthole or in a plugin, or a broken invariant, broke a turn.

    Not retried: trying again runs into the same bug, blocks the channel meanwhile and fills
    the log. The message is set aside at once with an honest reply, its traceback logged
    once; ``smarthole retry`` sends it again after a fix. Only transient failures (the
    network, 429, 5xx, overloaded) are deferred and retried.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False, kind="internal")


class TeamRequestError(TurnError):
    """A team task asked for something the configuration cannot give (an unknown agent...).

    Retrying cannot help until the request or ``config.toml`` changes, so it is not retried.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False, kind="team_request")


class TurnInterrupted(Exception):
    """A stop was requested; the turn stopped at a committed boundary and resumes later.

    Not a ``SmartholeError``: nothing went wrong. It passes through tools (a team task runs
    inside ``start_task``) up to the processor, which leaves the message to be resumed.
    """


class TurnHalted(Exception):
    """A turn was asked to stop for good (``/stop``, or a newer message in a channel whose
    busy policy is ``interrupt``): it stopped at a safe point, and is answered with what it
    did so far. Not a ``SmartholeError``, and not a ``TurnInterrupted``: it does not resume."""

    def __init__(self, reason: str, *, sent: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sent = sent  # a model call was sent and hung up: the model saw the turn's input


class ApprovalWaiting(TurnInterrupted):
    """A tool call waits for a person's approval: the turn pauses, and frees its worker.

    Like a stop it passes through tools (a team agent's call pauses its task) up to the
    processor, which makes the message wait until the answer or ``expires``.
    """

    def __init__(self, approval_id: str, expires: datetime) -> None:
        super().__init__(f"tool call waits for approval {approval_id}")
        self.approval_id = approval_id
        self.expires = expires


class ToolError(SmartholeError):
    """A tool could not do what it was asked; the text is shown to the model as is."""


class PathError(ToolError):
    """A path given to a workspace tool is not allowed."""


class LookupFailed(SmartholeError):
    """An id or prefix given by the user matched nothing, or was ambiguous."""


class UsageError(SmartholeError):
    """A command was asked for something it cannot do as asked (the CLI's exit status 2)."""


class DesktopError(SmartholeError):
    """The SmartHole desktop sent a frame the bridge cannot use, or refused to register it."""


class DaemonError(SmartholeError):
    """The daemon cannot start or run."""


class AlreadyRunning(DaemonError):
    """Another daemon holds the lock of this home."""

    def __init__(self, pid: int | None) -> None:
        where = f" (pid {pid})" if pid else ""
        super().__init__(f"already running{where}")
        self.pid = pid
