"""A conversation at the terminal, for ``chat`` and ``resume``: line editing, history, picking.

(``cli.commands.conversations`` declares the commands and reads their flags.) A chat ends with
``ExitCode.OK`` at end of input, ``FAILED`` when a reply did not come in time (the conversation
is kept), and ``INTERRUPTED`` on Ctrl-C.
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
from typing import TYPE_CHECKING

from ..errors import ExitCode
from ..home import Home
from .common import daemon_pid, preflight

if TYPE_CHECKING:
    from ..db.store import Store
    from .mailbox import ChatSession

logger = logging.getLogger(__name__)

HISTORY_FILE = "chat_history"
HISTORY_LENGTH = 1000


def talk(
    home: Home, store: Store, channel: str, conversation_id: str | None, *, timeout: float
) -> int:
    """Chat on ``channel`` until end of input; returns the exit code.

    With no daemon running for ``home``, one runs in this process for the chat's length.
    """
    from .mailbox import ChatSession, InProcessDaemon

    local_daemon = None
    if daemon_pid(home) is None:
        preflight(home)  # the same one-line error `run` gives, before anything starts
        local_daemon = InProcessDaemon(home)
        local_daemon.start()
    interactive = sys.stdin.isatty()
    if interactive:
        where = f"conversation {conversation_id}" if conversation_id else "a new conversation"
        print(f"Chatting in {where} on channel {channel}. End with Ctrl-D; Ctrl-C interrupts.")
    with _line_reader(home, interactive) as reader:
        session = ChatSession(
            home=home,
            store=store,
            channel=channel,
            conversation_id=conversation_id,
            reader=reader,
            out=sys.stdout,
            timeout=timeout,
            stop=threading.Event(),
        )
        try:
            return _talk(session)
        finally:
            if local_daemon is not None:
                local_daemon.stop()


def _talk(session: ChatSession) -> int:
    """Run the session; the exit code says how it ended."""
    try:
        session.run()
    except KeyboardInterrupt:
        session.stop.set()
        print("\n(interrupted: everything said so far is stored)", file=sys.stderr)
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


def _mark_untitled(session: ChatSession) -> None:
    """A chat that ended (not one still waiting for a reply) before it got a title."""
    from ..conversations import Conversations

    conversation_id = session.current_conversation()
    if conversation_id:
        Conversations(session.store).mark_interrupted_untitled(conversation_id)


@contextlib.contextmanager
def _line_reader(home: Home, interactive: bool) -> Iterator[Callable[[], str | None]]:
    """A function returning the next line (None at end of input), with line editing and
    history in ``.smarthole/chat_history`` when the terminal is interactive."""
    if not interactive:

        def read_piped() -> str | None:
            line = sys.stdin.readline()
            return line if line else None

        yield read_piped
        return

    def read() -> str | None:
        try:
            return input("you> ")
        except EOFError:
            print()
            return None

    history = home.state / HISTORY_FILE
    readline = _load_history(history)
    try:
        yield read
    finally:
        if readline is not None:
            _save_history(readline, history)


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
