"""Conversations: list them (``conversations``/``ls``), find what was said (``search``), read
one (``show``), talk (``chat``, ``resume``), and move them in and out (``export``, ``import``)."""

from __future__ import annotations

import argparse
import contextlib
from typing import TYPE_CHECKING

from ...errors import ExitCode, LookupFailed, UsageError
from ..common import now, print_json, rooted, starting, title_line
from ..parser import ID_HELP, Commands, bounded, command, number, one_of, option

if TYPE_CHECKING:
    from ...daemon.runtime import Runtime
    from ...db.search import SearchHit


def register(commands: Commands) -> None:
    for declared in (conversations, search, show, resume, chat, export, import_context):
        commands.add(declared)


@command("conversations", "list conversations, most recent first", aliases=["ls"])
@option("--channel", metavar="C", help="only this channel's conversations")
@option("--all", action="store_true", help="include ended conversations older than 30 days")
@option("--json", action="store_true", help="a JSON list")
@option("--limit", type=bounded(int, 1), metavar="N", help="at most N conversations")
def conversations(args: argparse.Namespace) -> int:
    from ..render import conversation_list

    with rooted(args) as root:
        views = root.conversations.recent(
            channel=args.channel, include_all=args.all, limit=args.limit, now=now()
        )
        approvals = root.approvals.waiting()
    if args.json:
        print_json([v.as_dict() for v in views])
    elif not views:
        print("No conversations yet.")
    else:
        print(conversation_list(views, now(), approvals))
    return ExitCode.OK


@command("search", "find what was said in any conversation (best match first)")
@option("query", metavar="QUERY", help='words; FTS5 syntax works: "a phrase", OR, NEAR, pre*')
@option("--conversation", metavar="ID", help="only this conversation (id or unique prefix)")
@option("--channel", metavar="C", help="only this channel's conversations")
@option("--since", metavar="DATE", help="only from then on: 2026-11-20, 2026-11-20T08:00, 7d, 12h")
@option("--role", choices=("human", "agent", "tool", "team"), help="only what this side said")
@option(
    "--limit",
    type=bounded(int, 1),
    default=20,
    metavar="N",
    help="at most N hits (20; 1,000 at most)",
)
@option("--json", action="store_true", help="a JSON list")
@option("--memory", action="store_true", help="search the agent's memory files instead")
def search(args: argparse.Namespace) -> int:
    from ..searching import hit_lines

    if args.memory:
        from ..memory import print_found

        with rooted(args) as root:
            print_found(root.memory, args.query, limit=args.limit, as_json=args.json)
        return ExitCode.OK
    with rooted(args) as root:
        hits = _search(root, args, limit=args.limit)
    if args.json:
        print_json([h.as_dict() for h in hits])
    elif not hits:
        print("Nothing found.")
    else:
        print(hit_lines(hits))
    return ExitCode.OK


def _search(root: Runtime, args: argparse.Namespace, *, limit: int) -> list[SearchHit]:
    """The hits ``args`` asks for (``query`` and the filters ``search`` takes)."""
    from ...db.search import Filters
    from ..searching import since_time

    wanted = getattr(args, "conversation", None)
    since = getattr(args, "since", None)
    filters = Filters(
        conversation_id=root.conversations.get(wanted).id if wanted else None,
        channel=getattr(args, "channel", None),
        since=since_time(since, now()) if since else None,
        role=getattr(args, "role", None),
    )
    return root.search.search(args.query, filters=filters, limit=limit)


@command("show", "print a conversation's transcript")
@option("id", metavar="ID", help=ID_HELP)
@option("--usage", action="store_true", help="the tokens each turn used, and totals")
@option("--json", action="store_true", help="with --usage: one JSON object")
def show(args: argparse.Namespace) -> int:
    from ..render import transcript

    if args.usage:
        from ..usage import show_usage

        with rooted(args) as root:
            return show_usage(root, args.id, as_json=args.json)
    if args.json:
        raise UsageError("--json works with --usage (for the transcript, use smarthole export)")
    with rooted(args) as root:
        conversation = root.conversations.get(args.id)
        print(
            transcript(
                conversation,
                root.store.turns(conversation.id),
                root.store.messages(conversation.id),
                root.outbox_record.items_for_conversation(conversation.id),
                root.approvals.of_conversation(conversation.id),
                fork=root.store.fork_of(conversation.id),
                memory=_memory_by_turn(root, conversation.id),
                answered=root.ledger.answered_by(conversation.id),
            )
        )
    return ExitCode.OK


def _memory_by_turn(root: Runtime, conversation_id: str) -> dict[int, list[str]]:
    """The memory files each turn of the conversation wrote (``show`` marks those turns)."""
    wrote: dict[int, list[str]] = {}
    for write in root.memory.tables.writes_in(conversation_id):
        if write.turn is not None and write.path not in wrote.setdefault(write.turn, []):
            wrote[write.turn].append(write.path)
    return wrote


@command("resume", "pick a conversation and continue it in chat")
@one_of(
    option("id", nargs="?", metavar="ID", help=ID_HELP + "; without one, pick from a list"),
    option("--search", dest="query", metavar="QUERY", help="pick from the conversations it finds"),
)
def resume(args: argparse.Namespace) -> int:
    from ..chat import chat_daemon, pick, talk
    from ..render import conversation_list, last_exchange
    from ..searching import hit_lines, per_conversation

    with rooted(args) as root:
        conversations = root.conversations
        if args.id:
            chosen = conversations.get(args.id)
        elif args.query is not None:
            found = per_conversation(_search(root, args, limit=200))[:20]
            if not found:
                print("No conversation matches.")
                return ExitCode.OK
            print("Conversations that match, best first:\n")
            print(hit_lines(found))
            picked = pick(len(found))
            if picked is None:
                return ExitCode.OK
            chosen = conversations.get(found[picked - 1].conversation_id)
        else:
            views = conversations.recent(limit=20, now=now())
            if not views:
                print("No previous conversations found.")
                return ExitCode.OK
            print("Recent conversations:\n")
            print(conversation_list(views, now()))
            picked = pick(len(views))
            if picked is None:
                return ExitCode.OK
            chosen = views[picked - 1].conversation
        chosen = conversations.reopen(chosen)
        print(f'Resuming "{title_line(chosen.title)}" ({chosen.id}).')
        said = conversations.export(chosen, root.outbox_record, entry_agent="agent")
        if said["turns"]:
            print(last_exchange(said["turns"]))
        with contextlib.ExitStack() as stack:
            with starting():  # loading the SDK takes seconds; a Ctrl-C meanwhile ends quietly
                local_daemon = stack.enter_context(chat_daemon(root.home))
            return talk(root, chosen.channel, chosen.id, local_daemon, timeout=600.0)


@command("chat", "talk to the agent in this terminal")
@option("--channel", metavar="C", default=None, help="the channel (default: chat)")
@one_of(
    option("--conversation", metavar="ID", help="continue this conversation"),
    option(
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue the channel's most recent conversation",
    ),
)
@number("--timeout", 600.0, "SECONDS", "how long to wait for each reply", above=True)
def chat(args: argparse.Namespace) -> int:
    # The first line at once (loading the SDK can take seconds); from it until the chat
    # starts, a Ctrl-C ends quietly.
    with contextlib.ExitStack() as stack:
        with starting("Starting the chat..."):
            from ..chat import chat_daemon, talk

            root = stack.enter_context(rooted(args))
            conversation_id, channel = _chat_target(root, args)
            local_daemon = stack.enter_context(chat_daemon(root.home))
        return talk(root, channel, conversation_id, local_daemon, timeout=args.timeout)


def _chat_target(root: Runtime, args: argparse.Namespace) -> tuple[str | None, str]:
    """The conversation (None: a new one) and channel that ``chat``'s flags ask for."""
    conversations, store = root.conversations, root.store
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


@command("export", "export a conversation as JSON or Markdown")
@option("id", metavar="ID", help=ID_HELP)
@option(
    "--format",
    choices=("json", "markdown", "context"),
    default="json",
    help="json (default), markdown, or context: the entry agent and the turns only",
)
@option(
    "--output",
    metavar="FILE",
    help="write the export to FILE (attachments go to FILE.attachments/ beside it)",
)
def export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ...fsutil import atomic_write
    from ..transfer import export_text

    output = Path(args.output) if args.output else None
    with rooted(args) as root:
        text = export_text(root, args.id, args.format, output)
    if output is None:
        print(text)
    else:
        atomic_write(output, (text + "\n").encode(), mode=None)
    return ExitCode.OK


@command("import", "import a context JSON as a new conversation")
@option("file", metavar="FILE", help="the JSON file, or - for standard input")
@option(
    "--channel",
    metavar="C",
    default=None,
    help="its channel (default: the export's own, else default)",
)
def import_context(args: argparse.Namespace) -> int:
    """Read a context JSON (seed 001's shape) into a new conversation; print its id."""
    from ..transfer import import_channel, read_context, restore_attachments

    data = read_context(args.file)
    channel = import_channel(data, args.channel)
    with rooted(args) as root:
        restore_attachments(root.home, data, args.file)
        conversation = root.conversations.import_context(data, channel=channel)
    print(conversation.id)
    return ExitCode.OK
