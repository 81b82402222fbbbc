"""``smarthole memory``: the agent's memory as the person reads, corrects and erases it; and
``smarthole forget``, which erases a conversation and everything derived from it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent.memorytext import memory_path, split
from ..errors import LookupFailed, UsageError
from ..formats import iso
from .output import one_line, print_json

if TYPE_CHECKING:
    from ..agent.memory import Memory
    from ..daemon.runtime import Runtime
    from ..db.memory import MemoryFile, MemoryWrite
    from ..pipeline.forget import Forgotten


def _local(moment: Any) -> str:
    return f"{moment.astimezone():%Y-%m-%d %H:%M}"


def print_files(memory: Memory, *, as_json: bool) -> None:
    files = memory.tables.files()
    if as_json:
        print_json([_file_dict(f) for f in files])
        return
    if not files:
        print("The memory is empty.")
        return
    print(f"{'PATH':40} {'SIZE':>8}  {'UPDATED':16}  SOURCES")
    for file in files:
        print(
            f"{one_line(file.path):40} {file.size:>8}  {_local(file.updated_at):16}  "
            f"{len(file.write_ids)}"
        )


def _file_dict(file: MemoryFile) -> dict[str, Any]:
    return {
        "path": file.path,
        "size": file.size,
        "created_at": iso(file.created_at),
        "updated_at": iso(file.updated_at),
        "sources": len(file.write_ids),
    }


def _write_dict(write: MemoryWrite) -> dict[str, Any]:
    return {
        "id": write.id,
        "operation": write.operation,
        "by": write.by,
        "agent": write.agent,
        "conversation_id": write.conversation_id,
        "turn": write.turn,
        "sources": list(write.sources),
        "at": iso(write.at),
    }


def _file(memory: Memory, wanted: str) -> MemoryFile:
    path = memory_path(wanted if wanted.startswith("/") else f"/memories/{wanted}")
    found = memory.tables.file(path)
    if found is None:
        raise LookupFailed(f"no memory file {path}")
    return found


def print_file(memory: Memory, wanted: str, *, as_json: bool) -> None:
    """The file's text, each line with the writes it came from, then those writes."""
    file = _file(memory, wanted)
    writes = memory.tables.writes(file.write_ids, path=file.path)
    if as_json:
        lines = [
            {"text": text, "writes": list(ids)}
            for text, ids in zip(split(file.text), file.lines, strict=False)
        ]
        print_json(
            {
                **_file_dict(file),
                "text": file.text,
                "lines": lines,
                "writes": [_write_dict(w) for w in writes],
            }
        )
        return
    print(f"{one_line(file.path)}  ({file.size} bytes, updated {_local(file.updated_at)})\n")
    for text, ids in zip(split(file.text), file.lines, strict=False):
        marks = ",".join(f"w{i}" for i in ids)
        print(f"{marks:>10} | {one_line(text)}")
    print("\nwrites:")
    for write in writes:
        who = write.by + (f" ({one_line(write.agent)})" if write.agent else "")
        where = (
            f"conversation {write.conversation_id} turn {write.turn}"
            if write.conversation_id
            else "by hand"
        )
        sources = f", message {', '.join(write.sources)}" if write.sources else ""
        print(
            f"  w{write.id:<6} {_local(write.at)}  {write.operation:11} by {who}  {where}{sources}"
        )


def print_found(memory: Memory, query: str, *, limit: int, as_json: bool) -> None:
    """``search --memory``: the files holding every word of ``query``, each with its first
    line that holds one."""
    words = query.lower().split()
    if not words:
        raise UsageError("the search query is empty")
    found = memory.tables.search(words, limit=limit)
    hits = []
    for file in found:
        line = next((t for t in split(file.text) if any(w in t.lower() for w in words)), "")
        hits.append({"path": file.path, "updated_at": iso(file.updated_at), "line": line})
    if as_json:
        print_json(hits)
    elif not hits:
        print("Nothing found.")
    for hit in [] if as_json else hits:
        print(f"{one_line(hit['path'])} · updated {hit['updated_at']}\n   {one_line(hit['line'])}")


def edit_file(memory: Memory, wanted: str, env: dict[str, str] | None = None) -> str:
    """Open ``$VISUAL`` or ``$EDITOR`` on the file (a new one if missing); store what the
    person saved, as their write."""
    env = dict(os.environ if env is None else env)
    path = memory_path(wanted if wanted.startswith("/") else f"/memories/{wanted}")
    found = memory.tables.file(path)
    before = found.text if found else ""
    editor = shlex.split(env.get("VISUAL") or env.get("EDITOR") or "vi")
    with tempfile.TemporaryDirectory(prefix="smarthole-memory-") as folder:
        draft = Path(folder) / Path(path).name
        draft.write_text(before, encoding="utf-8")
        draft.chmod(0o600)
        if subprocess.run([*editor, str(draft)], check=False).returncode != 0:
            raise UsageError(f"the editor ({editor[0]}) failed; {path} is unchanged")
        after = draft.read_text(encoding="utf-8")
    if after == before:
        return f"{path} is unchanged"
    with memory.tables.store.transaction() as db:
        memory.edit(db, path, after)
    return f"saved {path}"


def remove_file(memory: Memory, wanted: str) -> str:
    path = memory_path(wanted if wanted.startswith("/") else f"/memories/{wanted}")
    if memory.tables.file(path) is None and not memory.tables.files(path):
        raise LookupFailed(f"no memory file {path}")
    with memory.tables.store.transaction() as db:
        memory.remove(db, path)
    return f"removed {path}"


def forget(
    root: Runtime, wanted: str, *, turn: int | None, message: str | None, yes: bool
) -> Forgotten | str:
    """Forget conversation ``wanted`` (an id or a unique prefix), or one turn or message of
    it, after a yes on a terminal."""
    forgetter = root.forgetter
    try:
        conversation = root.conversations.get(wanted)
    except LookupFailed as exc:
        if forgetter.pending(wanted):  # cut short after its commit: finished now
            forgetter.finish_jobs()
            return f"finished forgetting {wanted}"
        raise UsageError(str(exc)) from exc
    what = f"turn {turn} of" if turn is not None else f"message {message} of" if message else ""
    label = f"{what} conversation {conversation.id}".strip()
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("forget asks before it erases: run it on a terminal, or add --yes")
        answer = input(f"Forget {label} and everything derived from it, for good? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return "nothing was forgotten"
    return forgetter.forget(conversation.id, turn=turn, message=message)


def print_forgotten(done: Forgotten | str, *, as_json: bool) -> None:
    if isinstance(done, str):
        print_json({"done": done}) if as_json else print(done)
        return
    report = {
        "conversation_id": done.conversation_id,
        "whole": done.whole,
        "turns": done.turns,
        "messages": done.messages,
        "tasks": done.tasks,
        "files": done.files,
        "blobs": done.blobs,
        "memory_deleted": list(done.memory.deleted),
        "memory_rewritten": list(done.memory.rewritten),
        "profiles_rewritten": done.memory.profiles,
        "checkpointed": done.checkpointed,
    }
    if as_json:
        print_json(report)
        return
    what = "conversation" if done.whole else f"turn(s) {', '.join(map(str, done.turns))} of"
    print(f"forgot {what} {done.conversation_id}")
    print(
        f"  removed {done.messages} messages, {done.tasks} team tasks, {done.files} files, "
        f"{done.blobs} attachment blobs"
    )
    for path in done.memory.deleted:
        print(f"  memory: deleted {one_line(path)}")
    for path in done.memory.rewritten:
        print(f"  memory: rewrote {one_line(path)} without what came from it")
    if done.memory.profiles:
        print(f"  memory: rewrote {done.memory.profiles} conversations' starting profiles")
    if not done.checkpointed:
        print("  the database was busy: run forget again to finish erasing the bytes")
