"""Lines of text for the workspace tools: reading with numbers, and editing by line or text.

Lines are counted as ``str.splitlines`` counts them, by read_file, edit_file and search_files
alike, so the line number the model read is the line it edits. A final newline ends the last
line rather than starting another, and an edit keeps every other line's own ending.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ToolError

MAX_READ_LINES = 2000
MAX_READ_CHARS = 100_000


@dataclass(frozen=True)
class LineRange:
    """Lines ``start`` to ``end``, 1-based and inclusive."""

    start: int
    end: int


def body(line: str) -> str:
    """``line`` without its line ending."""
    return line.splitlines()[0] if line else ""


def check_line(line: int, lowest: int, total: int) -> None:
    if not lowest <= line <= total:
        raise ToolError(f"Line {line} does not exist in file with {total} lines.")


def remove_lines(original: str, shown: str, delete: LineRange) -> tuple[str, str]:
    """``original`` without the lines of ``delete``, and the message saying so."""
    lines = original.splitlines(keepends=True)
    if delete.end < delete.start:
        raise ToolError(f"delete_lines end ({delete.end}) is before its start ({delete.start})")
    check_line(delete.start, 1, len(lines))
    check_line(delete.end, 1, len(lines))
    ended = lines[-1] != body(lines[-1])
    del lines[delete.start - 1 : delete.end]
    if lines and not ended:  # the file did not end with a newline; keep it that way
        lines[-1] = body(lines[-1])
    count = delete.end - delete.start + 1
    message = f'Deleted lines {delete.start}-{delete.end} ({count} line(s)) in "{shown}".'
    return "".join(lines), message


def insert_lines(
    original: str, shown: str, after: int | None, before: int | None, content: str
) -> tuple[str, str]:
    """``original`` with ``content``'s lines inserted, and the message saying so."""
    lines = original.splitlines(keepends=True)
    total = len(lines)
    if after is not None:
        check_line(after, 0, total)
        index, where = after, f"after line {after}"
    else:
        assert before is not None
        check_line(before, 1, total)
        index, where = before - 1, f"before line {before}"
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    new = [text + newline for text in content.splitlines() or [""]]
    if index == total and lines and lines[-1] == body(lines[-1]):
        lines[-1] += newline  # appending after a last line without a newline
        new[-1] = body(new[-1])
    lines[index:index] = new
    return "".join(lines), f'Inserted {len(new)} line(s) {where} in "{shown}".'


def numbered(lines: list[str], start: int, end: int) -> tuple[list[str], int, bool]:
    """Lines ``start``..``end`` as "N: text" within the read budget: the lines, the number of
    the last one shown, and whether that one had to be cut (a single line over the budget)."""
    shown: list[str] = []
    chars = 0
    for number in range(start, end + 1):
        line = f"{number}: {lines[number - 1]}"
        if len(shown) == MAX_READ_LINES or chars + len(line) > MAX_READ_CHARS:
            if not shown:
                return [line[:MAX_READ_CHARS]], number, True
            return shown, number - 1, False
        shown.append(line)
        chars += len(line) + 1
    return shown, end, False


def check_edit(
    old_text: str | None,
    new_text: str | None,
    replace_all: bool,
    after: int | None,
    before: int | None,
    delete: LineRange | None,
    content: str | None,
) -> None:
    """Refuse an ``edit_file`` call that does not ask for exactly one thing."""
    line_ops = [op for op in (after, before, delete) if op is not None]
    text_mode = old_text is not None or new_text is not None
    problem = None
    if text_mode and (line_ops or content is not None):
        problem = "Cannot mix text replacement (old_text/new_text) with line operations"
    elif not text_mode and not line_ops:
        problem = "Must provide old_text and new_text, or one line operation"
    elif len(line_ops) > 1:
        problem = "Only one line operation can be done per call"
    elif text_mode and (not old_text or new_text is None):
        problem = 'old_text must be non-empty, and new_text given ("" removes old_text)'
    elif line_ops and replace_all:
        problem = "replace_all only applies to old_text"
    elif line_ops and (delete is None) == (content is None):
        problem = "content is required to insert lines, and not taken by delete_lines"
    if problem:
        raise ToolError(f"{problem} (see the edit_file description)")


def replace_text(original: str, shown: str, old: str, new: str, every: bool) -> tuple[str, str]:
    count = original.count(old)
    if count == 0:
        quoted = old if len(old) <= 200 else old[:200] + "…"
        raise ToolError(f"Text '{quoted}' not found in {shown.rsplit('/', 1)[-1]}")
    replaced = count if every else 1
    updated = original.replace(old, new, -1 if every else 1)
    return updated, f'Replaced {replaced} occurrence(s) in "{shown}".'
