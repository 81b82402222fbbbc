"""The interactive commands: ``chat`` and ``resume`` (line editing, history, the picker).

They print; they raise ``SmartholeError`` subclasses for ``cli.main`` to turn into one-line
messages and exit codes. A chat exits 0 at end of input, 1 when a reply did not come in time
(the conversation is kept), and 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ..errors import LookupFailed
from ..home import Home
from .commands import _now, opened, preflight

if TYPE_CHECKING:
    from ..db.store import Store
    from .mailbox import ChatSession

logger = logging.getLogger(__name__)

HISTORY_FILE = "chat_history"
HISTORY_LENGTH = 1000
NO_REPLY = 1


def chat(args: argparse.Namespace) -> int:
    with opened(args) as (home, store):
        conversation_id, channel = _chat_target(store, args)
        return _chat(home, store, channel, conversation_id, timeout=args.timeout)


def resume(args: argparse.Namespace) -> int:
    from ..conversations import Conversations
    from .output import one_line
    from .render import conversation_list

    with opened(args) as (home, store):
        conversations = Conversations(store)
        if args.id:
            chosen = conversations.get(args.id)
        else:
            views = conversations.recent(limit=20, now=_now())
            if not views:
                print("No previous conversations found.")
                return 0
            print("Recent conversations:\n")
            print(conversation_list(views, _now()))
            picked = _pick(len(views))
            if picked is None:
                return 0
            chosen = views[picked - 1].conversation
        chosen = conversations.reopen(chosen)
        print(f'Resuming "{one_line(chosen.title or "Untitled conversation")}" ({chosen.id}).')
        return _chat(home, store, chosen.channel, chosen.id, timeout=600.0)


def _chat_target(store: Store, args: argparse.Namespace) -> tuple[str | None, str]:
    from ..conversations import Conversations

    conversations = Conversations(store)
    if args.conversation:
        conversation = conversations.reopen(conversations.get(args.conversation))
        return conversation.id, conversation.channel
    channel = args.channel or "chat"
    if args.continue_:
        recent = store.recent_conversations(channel=channel, limit=1)
        if not recent:
            raise LookupFailed(f"no conversation on channel {channel} to continue")
        conversation = conversations.reopen(recent[0])
        return conversation.id, channel
    return None, channel


def _chat(
    home: Home, store: Store, channel: str, conversation_id: str | None, *, timeout: float
) -> int:
    from .mailbox import ChatSession, InProcessDaemon, daemon_running

    local_daemon = None
    if not daemon_running(home):
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
        return 130
    if not session.timed_out:
        _mark_untitled(session)
        return 0
    conversation_id = session.current_conversation()
    where = (
        f"continue it with `smarthole chat --conversation {conversation_id}`"
        if conversation_id
        else f"message {session.last_message_id} is queued"
    )
    print(f"smarthole: no reply within {session.timeout:g}s; {where}", file=sys.stderr)
    return NO_REPLY


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


def _pick(count: int) -> int | None:
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
