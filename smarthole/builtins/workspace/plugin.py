"""The built-in ``workspace`` plugin: file tools over the home's ``workspace/`` folder.

Read, write, edit, search, list, move, delete (to ``.trash/``) and inspect notes. Every path
goes through :class:`~smarthole.builtins.workspace.paths.WorkspacePaths`, so no argument the
model can write reaches outside the workspace or into its protected folders. Reads find a file
whatever the case of its name when only one matches; writes use exact paths. A filesystem
error becomes a ``ToolError`` naming the workspace path, so the model never sees a host path.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import stat
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ... import hookimpl
from ...config import AttachmentSettings
from ...errors import ToolError
from ...fsutil import atomic_write, unique_path
from ...tools import ToolResult
from .lines import (
    MAX_READ_CHARS,
    LineRange,
    check_edit,
    insert_lines,
    numbered,
    remove_lines,
    replace_text,
)
from .media import AttachmentTools, read_media
from .paths import Entry, WorkspacePaths
from .search import FileMatch, glob_regex, search_text

if TYPE_CHECKING:
    from ...hookspecs import PluginApp

logger = logging.getLogger(__name__)

MAX_READ_BYTES = 32 * 1024 * 1024
MAX_LIST = 1000
MAX_SEARCH_FILES = 100
MAX_CONTEXT = 10
SEARCHED_BY_DEFAULT = (".md", ".txt")

Method = TypeVar("Method", bound=Callable[..., "str | ToolResult"])


@hookimpl
def register_tools(register: Callable[..., Any], app: PluginApp) -> None:
    """Register the file tools over ``app.home.workspace`` (created if missing)."""
    settings = app.config.workspace
    workspace = Workspace(app.home.workspace, settings.protected, settings.max_write_bytes)
    workspace.media = app.config.attachments
    # Reading is safe to repeat after a crash, and so is writing a whole file or creating a
    # folder; an edit, delete or move run twice would apply twice, or fail half-way.
    # The readers change nothing at all (read-only: a replay may run them for real).
    for name in ("read_file", "search_files", "list_files", "get_file_info"):
        register(getattr(workspace, name), idempotent=True, read_only=True)
    register(workspace.write_file, idempotent=True)
    register(workspace.create_folder, idempotent=True)
    register(workspace.edit_file)
    register(workspace.delete_file)
    register(workspace.move_file)
    register(AttachmentTools(workspace.paths, app.home.blobs).save_attachment, idempotent=True)


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def local_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M %Z")


def reports_os_errors(method: Method) -> Method:
    """Turn an ``OSError`` into a ``ToolError`` naming the workspace path, not the host's."""

    @functools.wraps(method)
    def wrapper(self: Workspace, *args: Any, **kwargs: Any) -> str | ToolResult:
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            logger.debug("workspace tool %s failed", method.__name__, exc_info=True)
            raise ToolError(self.paths.describe(exc)) from exc

    return cast(Method, wrapper)


class Workspace:
    """The tools, bound to one workspace folder."""

    def __init__(self, root: Path, protected: list[str], max_write_bytes: int) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.paths = WorkspacePaths(root, protected)
        self.max_write_bytes = max_write_bytes
        self.media = AttachmentSettings()  # what read_file may show as an image or document

    # -- reading ----------------------------------------------------------------------------

    @reports_os_errors
    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str | ToolResult:
        """Read a text file of the workspace; each line comes back as "N: text". An image or
        PDF comes back as itself, for you to look at.

        The name matches whatever its case when only one file matches. Long files are cut at
        2000 lines or 100,000 characters; the note at the end gives the lines shown, the total
        and the start_line to read on from.

        :param path: The file, relative to the workspace, like "Lists/Groceries.md".
        :param start_line: First line to show, 1-based (default: 1).
        :param end_line: Last line to show, inclusive (default: the last line).
        """
        target = self.paths.existing(path, "File")
        if target.is_dir():
            raise ToolError(f"'{path}' is a folder; use list_files to see what it holds")
        if (media := read_media(self.paths, target, self.media)) is not None:
            return media
        lines = self.paths.read_text(target, MAX_READ_BYTES).splitlines()
        total = len(lines)
        if total == 0:
            return f'File "{self.paths.display(target)}" is empty.'
        start = max(1, start_line or 1)
        end = total if end_line is None else min(total, end_line)
        if start > total:
            raise ToolError(f"start_line {start} is past the end of the file ({total} lines)")
        if end < start:
            raise ToolError(f"end_line {end_line} is before start_line {start}")
        shown, last, cut = numbered(lines, start, end)
        if last < end or cut:
            note = f"[Truncated: showing lines {start}-{last} of {total} total"
            note += f"; line {last} is cut at {MAX_READ_CHARS} characters" if cut else ""
            note += f". Use start_line={last + 1} to read on.]" if last < total else ".]"
            shown.append("\n" + note)
        elif start_line is not None or end_line is not None:
            shown.append(f"\n[Showing lines {start}-{end} of {total} total]")
        return "\n".join(shown)

    @reports_os_errors
    def search_files(
        self,
        pattern: str,
        file_pattern: str | None = None,
        context_lines: int = 2,
        max_results: int = 10,
    ) -> str:
        """Search the workspace's text files for a regular expression, line by line.

        Shows up to 5 excerpts per file, with line numbers and "> " before matching lines.
        Without file_pattern only Markdown (.md) and text (.txt) files are searched.

        :param pattern: A Python regular expression, matched against each line (case-sensitive;
            add (?i) to ignore case).
        :param file_pattern: A glob for the files to search, any case: "*.py" (by name, in any
            folder), "Projects/**" or "**/*.csv" (by path).
        :param context_lines: Lines of context before and after each match (0-10).
        :param max_results: How many files to report at most (1-100).
        """
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from exc
        if max_results < 1:
            raise ToolError("max_results must be at least 1")
        limit = min(max_results, MAX_SEARCH_FILES)
        context = min(max(context_lines, 0), MAX_CONTEXT)
        matcher = glob_regex(file_pattern) if file_pattern else None
        by_path = bool(file_pattern) and "/" in (file_pattern or "")
        found: list[FileMatch] = []
        for entry in self.paths.walk(self.paths.root):
            shown = self.paths.display(entry.path)
            if matcher is None:
                if entry.path.suffix.lower() not in SEARCHED_BY_DEFAULT:
                    continue
            elif not matcher.match(shown if by_path else entry.path.name):
                continue
            if self.paths.is_binary(entry.real):
                continue
            match = search_text(entry.real, shown, regex, context)
            if match is not None:
                found.append(match)
                if len(found) >= limit:
                    break
        if not found:
            return "No files found matching the pattern."
        return f"Found {len(found)} matching file(s):\n\n" + "\n\n".join(m.render() for m in found)

    @reports_os_errors
    def list_files(
        self, pattern: str = "*", path: str | None = None, max_results: int = 100
    ) -> str:
        """List files and folders of the workspace, newest first.

        :param pattern: A glob relative to the folder, any case: "*" (its own entries),
            "**/*.md" (every Markdown file below it), "**" (everything below it).
        :param path: The folder to list, relative to the workspace (default: the workspace).
        :param max_results: How many entries to show (1-1000).
        """
        if max_results < 1:
            raise ToolError("max_results must be at least 1")
        limit = min(max_results, MAX_LIST)
        base = self.paths.resolve(path or ".", any_case=True, allow_root=True)
        if not base.is_dir():
            what = "is a file, not a folder" if base.exists() else "was not found"
            raise ToolError(f"Folder not found: '{path}' {what}")
        matcher = glob_regex(pattern or "*")
        entries = [
            entry
            for entry in self.paths.walk(base, folders=True)
            if matcher.match(entry.path.relative_to(base).as_posix())
        ]
        entries.sort(key=lambda e: (-e.mtime, self.paths.display(e.path)))
        lines = [self._listed(entry) for entry in entries[:limit]]
        where = self.paths.display(base)
        if not lines:
            return f"No files match {pattern!r} in '{where}'."
        header = f"Found {len(entries)} item(s) matching {pattern!r} in '{where}'"
        if len(entries) > limit:
            header += f" (showing the {limit} newest)"
        return header + ":\n" + "\n".join(lines)

    @reports_os_errors
    def get_file_info(self, path: str) -> str:
        """Size, creation and modification time of a file or folder of the workspace.

        :param path: The file or folder, relative to the workspace (any case).
        """
        target = self.paths.existing(path, "Path")
        info = target.stat()
        created = getattr(info, "st_birthtime", info.st_ctime)
        shown = self.paths.display(target)
        if target.is_dir():
            head = f"Folder: {shown}/"
        else:
            head = f"File: {shown}\nSize: {size_text(info.st_size)} ({info.st_size} bytes)"
        return f"{head}\nCreated: {local_time(created)}\nModified: {local_time(info.st_mtime)}"

    # -- writing ----------------------------------------------------------------------------

    @reports_os_errors
    def write_file(self, path: str, content: str) -> str:
        """Create a file, or replace a whole file, with the given content.

        Missing parent folders are created. To change part of a file use edit_file.

        :param path: The file, relative to the workspace (exact name), like "Lists/Todo.md".
        :param content: The complete new content of the file (may be empty).
        """
        target = self.paths.resolve(path, write=True)
        if target.is_dir():
            raise ToolError(f"'{path}' is a folder; choose a file name")
        data = self._encoded(content)
        existed = target.exists()
        self.paths.make_folders(target.parent, path)
        atomic_write(target, data, mode=_kept_mode(target))  # the user's files keep their modes
        verb = "Overwrote" if existed else "Created"
        return f'{verb} file "{self.paths.display(target)}" ({size_text(len(data))})'

    @reports_os_errors
    def edit_file(
        self,
        path: str,
        old_text: str | None = None,
        new_text: str | None = None,
        replace_all: bool = False,
        insert_after_line: int | None = None,
        insert_before_line: int | None = None,
        delete_lines: LineRange | None = None,
        content: str | None = None,
    ) -> str:
        """Change part of a file: replace text, or insert or delete lines.

        Give either old_text and new_text (the first occurrence is replaced, or all with
        replace_all), or exactly one line operation: insert_after_line or insert_before_line
        with content, or delete_lines. Line numbers are those read_file shows.

        :param path: The file, relative to the workspace (exact name).
        :param old_text: The text to replace, exactly as it appears in the file.
        :param new_text: The replacement text ("" removes old_text).
        :param replace_all: Replace every occurrence of old_text, not just the first.
        :param insert_after_line: Insert content after this line (0 inserts at the beginning).
        :param insert_before_line: Insert content before this line (1-based).
        :param delete_lines: The lines to delete, {"start": first, "end": last}, inclusive.
        :param content: The line or lines to insert.
        """
        line_ops = (insert_after_line, insert_before_line, delete_lines)
        check_edit(old_text, new_text, replace_all, *line_ops, content)
        target = self.paths.resolve(path, write=True)
        if not target.is_file():
            raise ToolError(f"File not found: {path} (edit_file needs the exact name)")
        original = self.paths.read_text(target, MAX_READ_BYTES)
        shown = self.paths.display(target)
        if old_text is not None:
            updated, message = replace_text(original, shown, old_text, new_text or "", replace_all)
        elif delete_lines is not None:
            updated, message = remove_lines(original, shown, delete_lines)
        else:
            updated, message = insert_lines(
                original, shown, insert_after_line, insert_before_line, content or ""
            )
        atomic_write(target, self._encoded(updated), mode=_kept_mode(target))
        return message

    @reports_os_errors
    def create_folder(self, path: str) -> str:
        """Create a folder in the workspace, with any missing parent folders.

        :param path: The folder, relative to the workspace, like "Projects/2026".
        """
        target = self.paths.resolve(path, write=True)
        if target.is_dir():
            return f'Folder "{self.paths.display(target)}" already exists.'
        if os.path.lexists(target):
            raise ToolError(f"'{path}' is a file, not a folder")
        self.paths.make_folders(target, path)
        return f'Created folder "{self.paths.display(target)}".'

    @reports_os_errors
    def delete_file(self, path: str) -> str:
        """Delete a file or folder by moving it into the workspace's .trash/ folder.

        Nothing is erased: the item keeps its path under .trash/ (with a number added when
        that name is taken there), where read_file and list_files can still see it.

        :param path: The file or folder, relative to the workspace (exact name).
        """
        target = self.paths.resolve(path, write=True, link_itself=True)
        if not os.path.lexists(target):
            raise ToolError(f"File or folder not found: {path}")
        relative = self.paths.relative(target)
        folder = self.paths.trash_folder(relative.parent.parts)
        destination = unique_path(folder, relative.name)
        os.rename(target, destination)
        return f"Deleted '{relative}' to trash (now '{self.paths.display(destination)}')."

    @reports_os_errors
    def move_file(self, source: str, destination: str) -> str:
        """Move or rename a file or folder; never overwrites anything.

        Missing parent folders of the destination are created.

        :param source: What to move, relative to the workspace (exact name).
        :param destination: Its new path, relative to the workspace; must not exist yet.
        """
        origin = self.paths.resolve(source, write=True, link_itself=True)
        target = self.paths.resolve(destination, write=True, link_itself=True)
        if origin == target:
            return f"'{source}' and '{destination}' are the same path; nothing to do."
        if not os.path.lexists(origin):
            raise ToolError(f"File or folder not found: {source}")
        if os.path.lexists(target):
            raise ToolError(
                f"Destination already exists: {destination} (move_file never overwrites; "
                "choose another name or delete it first)"
            )
        if target.is_relative_to(origin):
            raise ToolError(f"cannot move '{source}' into itself")
        self.paths.make_folders(target.parent, destination)
        shutil.move(origin, target)
        return f"Moved '{self.paths.display(origin)}' to '{self.paths.display(target)}'."

    # -- helpers ----------------------------------------------------------------------------

    def _listed(self, entry: Entry) -> str:
        shown = self.paths.display(entry.path)
        if entry.is_dir:
            return f"[folder] {shown}/"
        return f"[file] {shown} (modified: {local_time(entry.mtime)})"

    def _encoded(self, content: str) -> bytes:
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolError(
                f"the content is {len(data)} bytes; the limit is {self.max_write_bytes} bytes "
                "([workspace] max_write_bytes). Write a smaller file, or split it in parts."
            )
        return data


def _kept_mode(target: Path) -> int | None:
    """An existing file's permission bits; None (the umask decides) for a new file."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        return None
