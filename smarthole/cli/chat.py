"""A conversation at the terminal, for ``chat`` and ``resume``: line editing, history, picking.

(``cli.commands.conversations`` declares the commands and reads their flags.) With no daemon
running for the home, the chat runs one in-process for its length, and says so. At the
prompt, Ctrl-C clears the line (as Python's REPL does) and Ctrl-D quits; while a reply is
awaited, Ctrl-C stops waiting and ends the chat, saying where the reply will be. Output that
arrives while the prompt shows (a plugin's ``print`` from the daemon this chat runs) goes on
a line of its own and the prompt is drawn again below it, with what was typed so far.

A chat ends with ``ExitCode.OK`` at end of input, ``FAILED`` when a reply did not come in time
(the conversation is kept), and ``INTERRUPTED`` on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ExitCode
from ..home import Home
from .common import daemon_pid, one_line, preflight
from .output import VisibleOutput

if TYPE_CHECKING:
    from ..daemon.runtime import Runtime
    from .mailbox import InProcessDaemon
    from .session import ChatSession

logger = logging.getLogger(__name__)

HISTORY_FILE = "chat_history"
HISTORY_LENGTH = 1000
PROMPT = "you> "
CLEAR_LINE = "\r\x1b[K"  # to the start of the line, and erase it
DIM, PLAIN = "\x1b[2m", "\x1b[0m"
STOPPING_NOTICE_AFTER = 0.5  # seconds a stop may take before the chat says what it waits for


@contextlib.contextmanager
def chat_daemon(home: Home) -> Iterator[InProcessDaemon | None]:
    """The daemon a chat talks to: None when one runs for ``home``, else one in this process
    (and a line that says so) until the block ends.

    Entered inside :func:`~smarthole.cli.common.starting`: loading the SDK takes seconds, and
    the modules the chat itself needs are imported here too, so that a Ctrl-C after start-up
    never lands in an import (see ``starting``).
    """
    from .mailbox import InProcessDaemon

    if daemon_pid(home) is not None:
        yield None
        return
    config = preflight(home)  # the same one-line error `run` gives, before anything starts
    print(
        "No daemon is running for this home, so this chat runs one itself until it ends "
        "(`smarthole run` runs one on its own).",
        flush=True,
    )
    local_daemon = InProcessDaemon(home, grace=config.daemon.shutdown_grace_seconds)
    local_daemon.start()
    try:
        yield local_daemon
    finally:
        _stop_local_daemon(local_daemon)


def talk(
    root: Runtime,
    channel: str,
    conversation_id: str | None,
    local_daemon: InProcessDaemon | None,
    *,
    timeout: float,
) -> int:
    """Chat on ``channel`` until end of input; returns the exit code.

    ``local_daemon`` is the daemon :func:`chat_daemon` runs in this process, if it runs one.
    """
    from .session import ChatSession

    if local_daemon is not None:  # one store per process: talk through the daemon's own root
        root.close()
        root = local_daemon.root
    interactive = sys.stdin.isatty()
    if interactive:
        where = f"conversation {conversation_id}" if conversation_id else "a new conversation"
        print(
            f"Chatting in {where} on channel {one_line(channel)}. Ctrl-D quits; "
            "Ctrl-C stops waiting for a reply."
        )
    raw = sys.stdout.stream if isinstance(sys.stdout, VisibleOutput) else sys.stdout
    with _line_reader(root.home, raw, interactive) as reader:
        session = ChatSession(
            root=root,
            channel=channel,
            conversation_id=conversation_id,
            reader=reader,
            out=sys.stdout,
            timeout=timeout,
            stop=threading.Event(),
            err=sys.stderr,
            show_tool=_tool_lines(raw),
        )
        return _talk(session, local_daemon)


def _stop_local_daemon(local_daemon: InProcessDaemon) -> None:
    """Stop the chat's own daemon; if that takes a while, say why, and let Ctrl-C end it."""
    try:
        if local_daemon.stop(STOPPING_NOTICE_AFTER):
            return
        print(
            "(stopping the daemon this chat ran: a turn in progress gets up to "
            f"{local_daemon.grace:g} s to reach a safe point; Ctrl-C leaves at once, and what "
            "is unfinished goes on when a daemon runs next)",
            file=sys.stderr,
            flush=True,
        )
        local_daemon.stop()
    except KeyboardInterrupt:
        # The daemon's threads may be inside a model call: end the process, as a second
        # Ctrl-C ends `smarthole run` (stored writes are transactions; nothing is lost).
        with contextlib.suppress(OSError, ValueError):
            print(file=sys.stderr, flush=True)
            sys.stdout.flush()
        os._exit(ExitCode.INTERRUPTED)


def _talk(session: ChatSession, local_daemon: InProcessDaemon | None) -> int:
    """Run the session; the exit code says how it ended."""
    try:
        session.run()
    except KeyboardInterrupt:
        session.stop.set()
        print(f"\n{_interrupted(session, local_daemon)}", file=sys.stderr, flush=True)
        _mark_untitled(session)
        return ExitCode.INTERRUPTED
    if not session.timed_out:
        _mark_untitled(session)
        return ExitCode.OK
    conversation_id = session.current_conversation()
    where = (
        f"continue it with `smarthole chat --conversation {conversation_id}`"
        if conversation_id
        else f"message {session.last_message_id} is queued"
    )
    print(f"smarthole: no reply within {session.timeout:g}s; {where}", file=sys.stderr)
    return ExitCode.FAILED


def _interrupted(session: ChatSession, local_daemon: InProcessDaemon | None) -> str:
    """What a Ctrl-C that ends the chat leaves behind."""
    message_id = session.waiting_for
    if message_id is None:
        return "(interrupted: everything said so far is stored)"
    see = session.where_to_see(message_id)
    if local_daemon is None:
        return (
            "(stopped waiting; the daemon goes on with the turn in the background, and "
            f"{see} when it comes)"
        )
    return (
        "(stopped waiting; the daemon this chat ran stops with it, and a turn it cannot finish "
        f"first goes on when a daemon runs next (`smarthole run`); then {see})"
    )


def _mark_untitled(session: ChatSession) -> None:
    """A chat that ended (not one still waiting for a reply) before it got a title."""
    conversation_id = session.current_conversation()
    if conversation_id:
        session.root.conversations.mark_interrupted_untitled(conversation_id)


def _tool_lines(raw: TextIO) -> Callable[[str], None] | None:
    """Dim lines for the tools the agent calls, when the output is a terminal that takes
    colour; None for the session's plain lines."""
    from .session import tool_line

    if not raw.isatty() or os.environ.get("NO_COLOR"):
        return None

    def show(name: str) -> None:
        raw.write(f"{DIM}{tool_line(name)}{PLAIN}\n")  # the name is escaped by tool_line
        raw.flush()

    return show


@contextlib.contextmanager
def _line_reader(home: Home, raw: TextIO, interactive: bool) -> Iterator[Callable[[], str | None]]:
    """A function returning the next line (None at end of input), with line editing and
    history in ``.smarthole/chat_history`` when the terminal is interactive."""
    if not interactive:

        def read_piped() -> str | None:
            line = sys.stdin.readline()
            return line if line else None

        yield read_piped
        return

    history = home.state / HISTORY_FILE
    readline = _load_history(history)
    screen = Screen(raw, readline)
    try:
        with screen.around_prompt():
            yield screen.read
    finally:
        if readline is not None:
            _save_history(readline, history)


class Screen:
    """An interactive chat's terminal: the prompt, and what other threads write around it.

    While the prompt shows, output from elsewhere (a plugin's ``print`` or a log line from the
    daemon this chat runs) first erases the prompt's line; once that output ends a line, the
    prompt is drawn again with what was typed so far, and typing goes on after it.
    """

    def __init__(self, raw: TextIO, readline: ModuleType | None) -> None:
        self.raw = raw  # the terminal itself: only our own control sequences are sent to it
        self.readline = readline
        self.lock = threading.RLock()
        self.prompting = False
        self.erased = False

    def read(self) -> str | None:
        """The next line typed, None at end of input (Ctrl-D); Ctrl-C clears the line."""
        while True:
            try:
                with self._prompt_shown():
                    return input(PROMPT)
            except EOFError:
                print()
                return None
            except KeyboardInterrupt:
                print("\n(Ctrl-D quits)")

    @contextlib.contextmanager
    def _prompt_shown(self) -> Iterator[None]:
        with self.lock:
            self.prompting, self.erased = True, False
        try:
            yield
        finally:
            with self.lock:
                self.prompting = False

    def write(self, stream: TextIO, text: str) -> int:
        """Write ``text`` to ``stream``, around the prompt if it shows."""
        with self.lock:
            if not self.prompting:
                return stream.write(text)
            if not self.erased:
                self.raw.write(CLEAR_LINE)
                self.raw.flush()
                self.erased = True
            written = stream.write(text)
            if text.endswith("\n"):
                stream.flush()
                typed = one_line(self.readline.get_line_buffer()) if self.readline else ""
                self.raw.write(PROMPT + typed)
                self.raw.flush()
                self.erased = False
            return written

    @contextlib.contextmanager
    def around_prompt(self) -> Iterator[None]:
        """While the block runs, ``sys.stdout``, ``sys.stderr`` and the log write around the
        prompt (see :meth:`write`)."""
        out, err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = AroundPrompt(out, self), AroundPrompt(err, self)
        logs = [
            handler
            for handler in logging.getLogger().handlers
            if isinstance(handler, logging.StreamHandler) and handler.stream in (out, err)
        ]
        streams = [handler.setStream(AroundPrompt(handler.stream, self)) for handler in logs]
        try:
            yield
        finally:
            for handler, stream in zip(logs, streams, strict=True):
                handler.setStream(stream)
            sys.stdout, sys.stderr = out, err


class AroundPrompt:
    """A text stream whose writes go around the chat's prompt (:meth:`Screen.write`)."""

    def __init__(self, stream: TextIO, screen: Screen) -> None:
        self.stream = stream
        self.screen = screen

    def write(self, text: str) -> int:
        return self.screen.write(self.stream, text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)  # flush, fileno, isatty, encoding...


def _load_history(history: Path) -> ModuleType | None:
    """Turn on ``input()``'s line editing; returns the readline module, or None without one."""
    try:
        import readline
    except ImportError:  # not every platform has it; plain input() still works
        return None
    readline.set_history_length(HISTORY_LENGTH)
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    return readline


def _save_history(readline: ModuleType, history: Path) -> None:
    """Write the history, readable by its owner only (it holds what was said)."""
    try:
        os.close(os.open(history, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(history, 0o600)
        readline.write_history_file(history)
    except OSError as exc:
        logger.warning("could not save the chat history to %s: %s", history, exc)


def pick(count: int) -> int | None:
    """Ask for a number from 1 to ``count``; None when the person cancels or input ends."""
    while True:
        print("\nEnter number to resume, or 'q' to cancel: ", end="", flush=True)
        line = sys.stdin.readline()
        answer = line.strip().lower()
        if not line or answer in ("q", "quit"):
            print()
            return None
        if answer.isdigit() and 1 <= int(answer) <= count:
            return int(answer)
        print(f"Please enter a number from 1 to {count}, or q.")
