"""The built-in ``workspace`` plugin: file tools over the home's ``workspace/`` folder.

Read, write, edit, search, list, move, delete (to ``.trash/``) and inspect notes. Every path
goes through :class:`~smarthole.tools.paths.WorkspacePaths`, so no argument the model can
write reaches outside the workspace or into its protected folders. Reads find a file whatever
the case of its name when only one matches; writes use exact paths.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import hookimpl
from ..errors import ToolError
from ..fsutil import atomic_write, unique_path
from .paths import TRASH, WorkspacePaths
from .search import FileMatch, glob_regex, search_text

if TYPE_CHECKING:
    from ..app import App

MAX_READ_LINES = 2000
MAX_READ_CHARS = 100_000
MAX_LIST = 1000


@dataclass(frozen=True)
class LineRange:
    """Lines ``start`` to ``end``, 1-based and inclusive."""

    start: int
    end: int


@hookimpl
def register_tools(register: Any, app: App) -> None:
    workspace = Workspace(
        app.home.workspace, app.config.workspace.protected, app.config.workspace.max_write_bytes
    )
    # Reading, and writing a whole file, are safe to repeat after a crash; edits, deletes and
    # moves are not (a second run would apply them twice, or fail half-way).
    register(workspace.read_file, idempotent=True)
    register(workspace.search_files, idempotent=True)
    register(workspace.list_files, idempotent=True)
    register(workspace.get_file_info, idempotent=True)
    register(workspace.write_file, idempotent=True)
    register(workspace.create_folder, idempotent=True)
    register(workspace.edit_file)
    register(workspace.delete_file)
    register(workspace.move_file)


def size_text(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def local_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M %Z")


class Workspace:
    """The tools, bound to one workspace folder."""

    def __init__(self, root: Path, protected: list[str], max_write_bytes: int) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.paths = WorkspacePaths(root, protected)
        self.max_write_bytes = max_write_bytes

    # -- reading ----------------------------------------------------------------------------

    def read_file(
        self, path: str, start_line: int | None = None, end_line: int | None = None
    ) -> str:
        """Read a text file of the workspace, with numbered lines.

        Long files are cut at 2000 lines or 100,000 characters; read on with start_line.

        :param path: The file, relative to the workspace (e.g. "Lists/Groceries.md").
        :param start_line: First line to show (1-based).
        :param end_line: Last line to show (inclusive).
        """
        target = self._existing(path)
        if target.is_dir():
            raise ToolError(f"'{path}' is a folder; use list_files to see what it holds")
        lines = self._text(target, path).splitlines()
        total = len(lines)
        if total == 0:
            return f"{self.paths.display(target)} is empty."
        start = max(1, start_line or 1)
        end = min(total, end_line or total)
        if start > total:
            raise ToolError(f"start_line {start} is past the end of the file ({total} lines)")
        if end < start:
            raise ToolError(f"end_line {end} is before start_line {start}")
        shown: list[str] = []
        chars = 0
        for number in range(start, end + 1):
            line = f"{number}: {lines[number - 1]}"
            if len(shown) >= MAX_READ_LINES or chars + len(line) > MAX_READ_CHARS:
                last = start + len(shown) - 1
                shown.append(
                    f"\n[Truncated: showing lines {start}-{last} of {total} total. "
                    f"Use start_line={last + 1} to read on.]"
                )
                return "\n".join(shown)
            shown.append(line)
            chars += len(line) + 1
        if start_line is not None or end_line is not None:
            shown.append(f"\n[Showing lines {start}-{end} of {total} total]")
        return "\n".join(shown)

    def search_files(
        self,
        pattern: str,
        file_pattern: str | None = None,
        context_lines: int = 2,
        max_results: int = 10,
    ) -> str:
        """Search the workspace's files for a regular expression, line by line.

        Without file_pattern, Markdown and text files are searched.

        :param pattern: A Python regular expression, matched against each line (case-sensitive).
        :param file_pattern: A glob for the files to search, like "*.md" or "Projects/**".
        :param context_lines: Lines of context around each match (0-10).
        :param max_results: How many files to report at most (1-100).
        """
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {pattern!r}: {exc}") from exc
        if not 1 <= max_results <= 100:
            raise ToolError("max_results must be between 1 and 100")
        context = min(max(context_lines, 0), 10)
        matcher = glob_regex(file_pattern) if file_pattern else None
        found: list[FileMatch] = []
        for file in self._walk(self.paths.root):
            relative = self.paths.display(file)
            if matcher is not None:
                subject = relative if "/" in (file_pattern or "") else file.name
                if not matcher.match(subject):
                    continue
            elif file.suffix.lower() not in (".md", ".txt"):
                continue
            match = search_text(file, relative, regex, context)
            if match is not None:
                found.append(match)
                if len(found) >= max_results:
                    break
        if not found:
            return "No files found matching the pattern."
        return f"Found {len(found)} matching file(s):\n\n" + "\n\n".join(m.render() for m in found)

    def list_files(
        self, pattern: str = "*", path: str | None = None, max_results: int = 100
    ) -> str:
        """List files and folders of the workspace, newest first.

        :param pattern: A glob relative to the folder: "*" (its entries), "**/*.md" (every
            Markdown file below it).
        :param path: The folder to list (default: the whole workspace).
        :param max_results: How many entries to show (1-1000).
        """
        if max_results < 1:
            raise ToolError("max_results must be at least 1")
        limit = min(max_results, MAX_LIST)
        base = self.paths.resolve(path or ".", any_case=True, allow_root=True)
        if not base.is_dir():
            raise ToolError(f"Folder not found: {path}")
        matcher = glob_regex(pattern or "*")
        entries = []
        for entry in self._walk(base, folders=True):
            relative = entry.relative_to(base).as_posix()
            if matcher.match(relative):
                entries.append((entry.stat().st_mtime, self.paths.display(entry), entry))
        entries.sort(key=lambda item: (-item[0], item[1]))
        lines = [
            f"[folder] {shown}/"
            if entry.is_dir()
            else f"[file] {shown} (modified: {local_time(mtime)})"
            for mtime, shown, entry in entries[:limit]
        ]
        where = self.paths.display(base)
        if not lines:
            return f"No files match {pattern!r} in '{where}'."
        header = f"Found {len(entries)} item(s) matching {pattern!r} in '{where}'"
        if len(entries) > limit:
            header += f" (showing the {limit} newest)"
        return header + ":\n" + "\n".join(lines)

    def get_file_info(self, path: str) -> str:
        """Size and times of a file or folder of the workspace.

        :param path: The file or folder, relative to the workspace.
        """
        target = self._existing(path)
        info = target.stat()
        created = getattr(info, "st_birthtime", info.st_ctime)
        shown = self.paths.display(target)
        if target.is_dir():
            count = sum(1 for entry in target.iterdir() if self.paths.is_visible(entry))
            head = f"Folder: {shown}/\nItems: {count}"
        else:
            head = f"File: {shown}\nSize: {size_text(info.st_size)} ({info.st_size} bytes)"
        return f"{head}\nCreated: {local_time(created)}\nModified: {local_time(info.st_mtime)}"

    # -- writing ----------------------------------------------------------------------------

    def write_file(self, path: str, content: str) -> str:
        """Create a file, or replace one, with the given content. Parent folders are created.

        :param path: The file, relative to the workspace.
        :param content: The whole new content of the file.
        """
        target = self.paths.resolve(path, write=True)
        if target.is_dir():
            raise ToolError(f"'{path}' is a folder; choose a file name")
        data = self._encoded(content)
        existed = target.exists()
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data)
        verb = "Overwrote" if existed else "Created"
        return f'{verb} file "{self.paths.display(target)}" ({size_text(len(data))})'

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
        """Edit a file: replace text, or do one line operation.

        Either old_text (with new_text; replace_all for every occurrence), or exactly one of
        insert_after_line / insert_before_line (with content) or delete_lines.

        :param path: The file, relative to the workspace (exact name).
        :param old_text: The text to replace, exactly as it appears.
        :param new_text: The replacement (empty to remove old_text).
        :param replace_all: Replace every occurrence instead of the first.
        :param insert_after_line: Insert content after this line (0 = at the very beginning).
        :param insert_before_line: Insert content before this line (1-based).
        :param delete_lines: The lines to delete, {"start": a, "end": b}, inclusive.
        :param content: The lines to insert.
        """
        line_ops = [
            op for op in (insert_after_line, insert_before_line, delete_lines) if op is not None
        ]
        text_mode = old_text is not None or new_text is not None
        if text_mode and line_ops:
            raise ToolError(
                "Cannot mix text replacement (old_text/new_text) with line "
                "operations (insert_after_line, insert_before_line, delete_lines)"
            )
        if not text_mode and not line_ops:
            raise ToolError(
                "Must provide old_text and new_text, or one line operation "
                "(insert_after_line, insert_before_line or delete_lines)"
            )
        if len(line_ops) > 1:
            raise ToolError("Only one line operation can be done per call")
        target = self.paths.resolve(path, write=True)
        if not target.is_file():
            raise ToolError(f"File not found: {path} (edit_file needs the exact name)")
        original = self._text(target, path)
        shown = self.paths.display(target)
        if text_mode:
            updated, message = self._replace(original, shown, old_text, new_text or "", replace_all)
        else:
            updated, message = self._line_op(
                original, shown, insert_after_line, insert_before_line, delete_lines, content
            )
        atomic_write(target, self._encoded(updated))
        return message

    def create_folder(self, path: str) -> str:
        """Create a folder (and its parents) in the workspace.

        :param path: The folder, relative to the workspace.
        """
        target = self.paths.resolve(path, write=True)
        if target.is_dir():
            return f'Folder "{self.paths.display(target)}" already exists.'
        if target.exists():
            raise ToolError(f"'{path}' is a file, not a folder")
        target.mkdir(parents=True)
        return f'Created folder "{self.paths.display(target)}".'

    def delete_file(self, path: str) -> str:
        """Delete a file or folder by moving it to the workspace's .trash/ folder.

        :param path: The file or folder, relative to the workspace (exact name).
        """
        target = self.paths.resolve(path, write=True, link_itself=True)
        if target == self.paths.root:
            raise ToolError("the workspace itself cannot be deleted")
        if not (target.exists() or target.is_symlink()):
            raise ToolError(f"File or folder not found: {path}")
        relative = self.paths.relative(target)
        trash_folder = self.paths.root / TRASH / relative.parent
        trash_folder.mkdir(parents=True, exist_ok=True)
        destination = unique_path(trash_folder, relative.name)
        os.replace(target, destination)
        return f"Deleted '{relative}' (moved to {self.paths.display(destination)})."

    def move_file(self, source: str, destination: str) -> str:
        """Move or rename a file or folder; never overwrites.

        :param source: What to move, relative to the workspace (exact name).
        :param destination: Its new path, relative to the workspace.
        """
        origin = self.paths.resolve(source, write=True, link_itself=True)
        target = self.paths.resolve(destination, write=True, link_itself=True)
        if origin == target:
            return f"'{source}' and '{destination}' are the same path; nothing to do."
        if origin == self.paths.root:
            raise ToolError("the workspace itself cannot be moved")
        if not (origin.exists() or origin.is_symlink()):
            raise ToolError(f"File or folder not found: {source}")
        if target.exists() or target.is_symlink():
            raise ToolError(f"Destination already exists: {destination}; refusing to overwrite it")
        if target.is_relative_to(origin):
            raise ToolError(f"cannot move '{source}' into itself")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(origin, target)
        return f"Moved '{self.paths.display(origin)}' to '{self.paths.display(target)}'."

    # -- helpers ----------------------------------------------------------------------------

    def _existing(self, path: str) -> Path:
        target = self.paths.resolve(path, any_case=True)
        if not target.exists():
            raise ToolError(f"File not found: {path}")
        return target

    def _text(self, target: Path, path: str) -> str:
        try:
            return target.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"'{path}' is not a UTF-8 text file") from exc

    def _encoded(self, content: str) -> bytes:
        data = content.encode("utf-8")
        if len(data) > self.max_write_bytes:
            raise ToolError(
                f"the content is {len(data)} bytes; the limit is "
                f"{self.max_write_bytes} bytes ([workspace] max_write_bytes)"
            )
        return data

    @staticmethod
    def _replace(
        original: str, shown: str, old: str | None, new: str, replace_all: bool
    ) -> tuple[str, str]:
        if not old:
            raise ToolError("old_text must not be empty")
        count = original.count(old)
        if count == 0:
            raise ToolError(f"Text '{old}' not found in {Path(shown).name}")
        replaced = count if replace_all else 1
        updated = original.replace(old, new) if replace_all else original.replace(old, new, 1)
        return updated, f'Replaced {replaced} occurrence(s) in "{shown}".'

    @staticmethod
    def _line_op(
        original: str,
        shown: str,
        after: int | None,
        before: int | None,
        delete: LineRange | None,
        content: str | None,
    ) -> tuple[str, str]:
        ending = "\n" if original.endswith("\n") or not original else ""
        lines = original.splitlines()
        total = len(lines)

        def check(line: int, lowest: int) -> None:
            if not lowest <= line <= total:
                raise ToolError(f"Line {line} does not exist in file with {total} lines.")

        if delete is not None:
            check(delete.start, 1)
            check(delete.end, delete.start)
            del lines[delete.start - 1 : delete.end]
            count = delete.end - delete.start + 1
            message = f'Deleted lines {delete.start}-{delete.end} ({count} line(s)) in "{shown}".'
            return "\n".join(lines) + (ending if lines else ""), message
        if content is None:
            raise ToolError("content is required to insert lines")
        new_lines = content.splitlines() or [""]
        if after is not None:
            check(after, 0)
            index, where = after, f"after line {after}"
        else:
            assert before is not None
            check(before, 1)
            index, where = before - 1, f"before line {before}"
        lines[index:index] = new_lines
        message = f'Inserted {len(new_lines)} line(s) {where} in "{shown}".'
        return "\n".join(lines) + ending, message

    def _walk(self, base: Path, *, folders: bool = False) -> list[Path]:
        """Everything below ``base`` that a tool may see, sorted; no links out, and the trash
        only when the walk starts inside it."""
        relative = self.paths.relative(base).parts
        trash = bool(relative) and relative[0].lower() == TRASH

        def visible(path: Path) -> bool:
            return self.paths.is_visible(path, trash=trash)

        found = []
        for folder, dirs, files in os.walk(base):
            current = Path(folder)
            dirs[:] = sorted(d for d in dirs if visible(current / d))
            if folders:
                found += [current / d for d in dirs]
            found += [current / f for f in sorted(files) if visible(current / f)]
        return found
