"""The interactive commands: ``chat`` and ``resume``.

They print; they raise ``SmartholeError`` subclasses for ``cli.main`` to turn into one-line
messages and exit codes.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, Any

from .commands import _home, _now, _store, preflight
from .config import Home
from .errors import LookupFailed

if TYPE_CHECKING:
    from .store import Store


def chat(args: argparse.Namespace) -> int:
    home = _home(args)
    store = _store(home)
    try:
        conversation_id, channel = _chat_target(store, args)
        return _chat(home, store, channel, conversation_id, timeout=args.timeout)
    finally:
        store.close()


def _chat_target(store: Store, args: argparse.Namespace) -> tuple[str | None, str]:
    from .conversations import Conversations

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
    from .chat import ChatSession, InProcessDaemon, daemon_running
    from .conversations import Conversations

    local_daemon = None
    if not daemon_running(home):
        preflight(home)  # the same one-line error `run` gives, before anything starts
        local_daemon = InProcessDaemon(home)
        local_daemon.start()
    interactive = sys.stdin.isatty()
    if interactive:
        where = f"conversation {conversation_id}" if conversation_id else "a new conversation"
        print(f"Chatting in {where} on channel {channel}. End with Ctrl-D; Ctrl-C interrupts.")
    session = ChatSession(
        home=home,
        store=store,
        channel=channel,
        conversation_id=conversation_id,
        reader=_line_reader(interactive),
        out=sys.stdout,
        timeout=timeout,
        stop=threading.Event(),
    )
    code = 0
    try:
        session.run()
    except KeyboardInterrupt:
        session.stop.set()
        print("\n(interrupted: everything said so far is stored)", file=sys.stderr)
        code = 130
    finally:
        if local_daemon is not None:
            local_daemon.stop()
        conversation_id = session.current_conversation()
        if conversation_id:
            Conversations(store).mark_interrupted_untitled(conversation_id)
    return code


def _line_reader(interactive: bool) -> Any:
    def read() -> str | None:
        if interactive:
            try:
                return input("you> ")
            except EOFError:
                print()
                return None
        line = sys.stdin.readline()
        return line if line else None

    return read


def resume(args: argparse.Namespace) -> int:
    from .conversations import Conversations
    from .display import conversation_list

    home = _home(args)
    store = _store(home)
    try:
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
        print(f'Resuming "{chosen.title or "Untitled conversation"}" ({chosen.id}).')
        return _chat(home, store, chosen.channel, chosen.id, timeout=600.0)
    finally:
        store.close()


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
