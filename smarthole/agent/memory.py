"""The agent's memory: Anthropic's memory tool (``memory_20250818``) over rows of the store.

The tool's commands (``view``, ``create``, ``str_replace``, ``insert``, ``delete``,
``rename``) run inside the transaction that records the tool's result
(:class:`~smarthole.agent.recorder.CommittedResult`): the write and its acknowledgement commit
together, so after a kill -9 the call either happened once, its result stored, or not at all
(and runs again: the tool is idempotent in that sense). Each write records the message ids it
came from; each line of a file, the writes it came from (``db.memory``). The person's own
edits (``smarthole memory edit``, ``rm``) go through the same :class:`Memory`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..db.events import place
from ..db.memory import MemoryFile, WriteSource, size_of
from ..tools import Tool, ToolResult
from .memorytext import (
    PROFILE,
    ROOT,
    MemoryRefused,
    attribute,
    edit_snippet,
    memory_path,
    profile_section,
    split,
    view_file,
    view_folder,
    without,
)
from .recorder import CommittedResult

if TYPE_CHECKING:
    from ..config.memory import MemorySettings
    from ..db.events import EventLog
    from ..db.memory import MemoryTables
    from ..tools import ToolContext, ToolSet

TOOL_NAME = "memory"
SPEC = {"type": "memory_20250818", "name": TOOL_NAME}
BETA = "context-management-2025-06-27"  # the API's beta header the memory tool needs
COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")


@dataclass(frozen=True)
class ForgetReport:
    """What a forget did to the memory: files deleted, files rewritten without lines."""

    deleted: tuple[str, ...] = ()
    rewritten: tuple[str, ...] = ()
    profiles: int = 0  # conversations' starting profiles rewritten


@dataclass(eq=False)
class Memory:
    """The memory's commands over its tables, with the limits of ``[memory]``."""

    tables: MemoryTables
    events: EventLog | None
    settings: Callable[[], MemorySettings]

    # -- the tool's commands ----------------------------------------------------------------

    def answer(
        self, db: sqlite3.Connection, arguments: Any, source: WriteSource, where: dict[str, Any]
    ) -> ToolResult:
        """Run one memory tool call in ``db``'s transaction; a refusal is an error result."""
        try:
            if not self.settings().enabled:
                raise MemoryRefused("the memory is turned off ([memory] enabled = false)")
            return ToolResult(self.run(db, arguments, source, where))
        except MemoryRefused as exc:
            return ToolResult(f"Error: {exc}", is_error=True)

    def run(self, db: sqlite3.Connection, arguments: Any, source: WriteSource, where: dict) -> str:
        if not isinstance(arguments, dict):
            raise MemoryRefused("the memory tool's input must be an object")
        command = arguments.get("command")
        if command not in COMMANDS:
            raise MemoryRefused(f"Unknown command {command!r}: use one of {', '.join(COMMANDS)}")
        act = _Act(self, db, source, where)
        if command == "view":
            return act.view(memory_path(arguments.get("path"), root=True), arguments)
        if command == "rename":
            old = memory_path(arguments.get("old_path"))
            return act.rename(old, memory_path(arguments.get("new_path")))
        path = memory_path(arguments.get("path"))
        if command == "create":
            return act.create(path, _text(arguments, "file_text"))
        if command == "str_replace":
            return act.replace(path, _text(arguments, "old_str"), _text(arguments, "new_str"))
        if command == "insert":
            line = arguments.get("insert_line")
            if not isinstance(line, int) or isinstance(line, bool):
                raise MemoryRefused("insert_line must be an integer")
            return act.insert(path, line, _text(arguments, "insert_text"))
        return act.delete(path)

    # -- the person's side ----------------------------------------------------------------

    def edit(self, db: sqlite3.Connection, path: str, text: str) -> str:
        """The person's whole new text of ``path`` (``smarthole memory edit``)."""
        return _Act(self, db, WriteSource(by="person"), place(None, None, None, None)).create(
            memory_path(path), text
        )

    def remove(self, db: sqlite3.Connection, path: str) -> str:
        """The person deletes ``path``, a file or a folder (``smarthole memory rm``)."""
        return _Act(self, db, WriteSource(by="person"), place(None, None, None, None)).delete(
            memory_path(path)
        )

    def profile_section(self, conversation_id: str) -> str:
        """The system prompt's memory section for ``conversation_id``: its profile as it
        stood when the conversation began (taken at its first turn)."""
        profile = self.tables.profile_of(conversation_id, PROFILE)
        return profile_section(profile, self.settings().profile_chars)

    def forget(self, db: sqlite3.Connection, message_ids: set[str]) -> ForgetReport:
        """Remove every write whose sources include one of ``message_ids``, and each line
        that came from one: a file left with no line of its own is deleted, another rewritten
        from its remaining lines; so are the profiles conversations began with."""
        forgotten = set(self.tables.writes_from(message_ids, db))
        if not forgotten:
            return ForgetReport()
        deleted, rewritten = [], []
        for file in self.tables.files(None, db):
            if not file.write_ids & forgotten:
                continue
            text, lines = without(file.text, file.lines, forgotten)
            if not any(ids for ids in lines):
                self.tables.remove(db, [file.path])
                deleted.append(file.path)
                self._event("memory_deleted", file.path, "forget", WriteSource(by="person"), db)
            else:
                self.tables.put(db, file.path, text, lines)
                rewritten.append(file.path)
                self._event("memory_written", file.path, "forget", WriteSource(by="person"), db)
        profiles = self.tables.profiles_with(db, forgotten)
        for conversation_id, text, lines in profiles:
            self.tables.set_profile(db, conversation_id, *without(text, lines, forgotten))
        self.tables.delete_writes(db, forgotten)
        return ForgetReport(tuple(deleted), tuple(rewritten), len(profiles))

    def _event(
        self,
        kind: str,
        path: str,
        operation: str,
        source: WriteSource,
        db: sqlite3.Connection,
        where: dict[str, Any] | None = None,
        **fields: Any,
    ) -> None:
        if self.events is None:
            return
        self.events.emit(
            kind,
            **(where or place(None, None, None, None)),
            db=db,
            path=path,
            operation=operation,
            by=source.by,
            agent=source.agent,
            sources=list(source.sources),
            **fields,
        )


@dataclass(eq=False)
class _Act:
    """One command's work inside one transaction."""

    memory: Memory
    db: sqlite3.Connection
    source: WriteSource
    where: dict[str, Any]

    def _file(self, path: str) -> MemoryFile:
        found = self.memory.tables.file(path, self.db)
        if found is None:
            if self.memory.tables.files(path, self.db):
                raise MemoryRefused(f"The path {path} is not a file.")
            raise MemoryRefused(f"The path {path} does not exist. Please provide a valid path.")
        return found

    def view(self, path: str, arguments: dict[str, Any]) -> str:
        found = self.memory.tables.file(path, self.db)
        if found is not None:
            return view_file(path, found.text, arguments.get("view_range"))
        below = self.memory.tables.files(None if path == ROOT else path, self.db)
        if below or path == ROOT:
            return view_folder(path, below)
        raise MemoryRefused(f"The path {path} does not exist. Please provide a valid path.")

    def create(self, path: str, text: str) -> str:
        if self.memory.tables.files(path, self.db):
            raise MemoryRefused(f"The path {path} is a directory")
        self._write(path, text, "create")
        return f"File created successfully at: {path}"

    def replace(self, path: str, old: str, new: str) -> str:
        text = self._file(path).text
        if not old:
            raise MemoryRefused("old_str must not be empty")
        count = text.count(old)
        if count == 0:
            raise MemoryRefused(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            )
        if count > 1:
            starts, at = [], text.find(old)
            while at != -1:
                starts.append(str(text[:at].count("\n") + 1))
                at = text.find(old, at + 1)
            raise MemoryRefused(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                f"lines: {', '.join(starts)}. Please ensure it is unique"
            )
        changed = text[: text.find(old)].count("\n")
        updated = text.replace(old, new)
        self._write(path, updated, "str_replace")
        return edit_snippet(updated, changed)

    def insert(self, path: str, line: int, insert: str) -> str:
        text = self._file(path).text
        lines = split(text)
        if lines[-1] == "":
            lines.pop()
        if line < 0 or line > len(lines):
            raise MemoryRefused(
                f"Invalid `insert_line` parameter: {line}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(line, insert.rstrip("\n"))
        self._write(path, "\n".join(lines) + "\n", "insert")
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        tables = self.memory.tables
        found = tables.file(path, self.db)
        paths = [path] if found else [f.path for f in tables.files(path, self.db)]
        if not paths:
            raise MemoryRefused(f"The path {path} does not exist")
        tables.remove(self.db, paths)
        for gone in paths:
            self.memory._event("memory_deleted", gone, "delete", self.source, self.db, self.where)
        return f"Successfully deleted {path}"

    def rename(self, old: str, new: str) -> str:
        tables = self.memory.tables
        if tables.file(new, self.db) or tables.files(new, self.db):
            raise MemoryRefused(f"The destination {new} already exists")
        if new.startswith(old + "/"):
            raise MemoryRefused(f"Cannot move {old} into itself")
        found = tables.file(old, self.db)
        moves = (
            [(old, new)]
            if found
            else [(f.path, new + f.path[len(old) :]) for f in tables.files(old, self.db)]
        )
        if not moves:
            raise MemoryRefused(f"The path {old} does not exist")
        for before, after in moves:
            memory_path(after)  # the new path's length, checked
            tables.move(self.db, before, after)
            tables.record_write(self.db, after, "rename", self.source)
            self.memory._event(
                "memory_written", after, "rename", self.source, self.db, self.where, old_path=before
            )
        return f"Successfully renamed {old} to {new}"

    def _write(self, path: str, text: str, operation: str) -> None:
        settings, tables = self.memory.settings(), self.memory.tables
        size = size_of(text)
        if size > settings.max_file_bytes:
            raise MemoryRefused(
                f"{path} would be {size:,} bytes; a memory file may have at most "
                f"{settings.max_file_bytes:,} ([memory] max_file_bytes)"
            )
        old = tables.file(path, self.db)
        total = tables.total_bytes(self.db) - (old.size if old else 0) + size
        if total > settings.max_bytes:
            raise MemoryRefused(
                f"the memory would hold {total:,} bytes, more than its {settings.max_bytes:,} "
                "([memory] max_bytes): delete or shorten something first"
            )
        write_id = tables.record_write(self.db, path, operation, self.source)
        lines = attribute(old.text if old else "", old.lines if old else (), text, write_id)
        tables.put(self.db, path, text, lines)
        self.memory._event("memory_written", path, operation, self.source, self.db, self.where)


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str):
        raise MemoryRefused(f"{key} must be a string")
    return value


@dataclass(kw_only=True)
class MemoryTool(Tool):
    """The memory tool as the model is offered it; ``agent``: a team agent's name (None: the
    entry agent)."""

    memory: Memory = dataclasses.field(repr=False)
    agent: str | None = None

    @property
    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"command": {"enum": list(COMMANDS)}}}

    def spec(self) -> dict[str, Any]:
        return dict(SPEC)

    def call(self, arguments: Any, context: ToolContext | None) -> ToolResult:
        if context is None:
            return ToolResult("Error: the memory tool runs only in a turn", is_error=True)
        source = WriteSource(
            by="agent",
            agent=self.agent or context.app.config.agent.name,
            conversation_id=context.conversation_id,
            turn=context.turn,
            sources=(context.message_id,),
            tool_use_id=context.tool_use_id,
        )
        where = place(context.conversation_id, context.channel, context.turn, context.message_id)
        memory = self.memory
        return CommittedResult("", commit=lambda db: memory.answer(db, arguments, source, where))


def memory_tool(memory: Memory) -> MemoryTool:
    return MemoryTool(
        name=TOOL_NAME,
        description=(
            "Anthropic's memory tool: files under /memories, kept in smarthole's store, that "
            "outlast the conversation."
        ),
        plugin="smarthole",
        idempotent=True,  # its write commits with its result: a call cut short never wrote
        memory=memory,
    )


def team_memory_tool(tools: ToolSet, agent: str) -> Tool | None:
    """The memory tool for team agent ``agent`` (its writes name it), if there is one."""
    tool = tools.get(TOOL_NAME)
    return dataclasses.replace(tool, agent=agent) if isinstance(tool, MemoryTool) else None
