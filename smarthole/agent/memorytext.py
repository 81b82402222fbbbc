"""The memory's text: paths under ``/memories``, where each line came from, and what the memory
tool's ``view`` shows (the texts of the SDK's ``BetaLocalFilesystemMemoryTool``)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..db.memory import Lines, MemoryFile
from ..errors import ToolError
from ..formats import has_control_characters

ROOT = "/memories"
PROFILE = "/memories/profile.md"
MAX_PATH_BYTES = 255
LINE_NUMBER_WIDTH = 6  # the SDK's: len(str(999999))


class MemoryRefused(ToolError):
    """A memory command that cannot be done; its message is the tool error the model reads."""


def memory_path(path: object, *, root: bool = False) -> str:
    """``path`` made canonical (``/memories/a/b.md``), or ``MemoryRefused`` saying why not:
    not under /memories, ``..`` or ``.`` or an empty part, a control character, over 255
    bytes. ``root``: /memories itself is allowed (a view, not a write)."""
    if not isinstance(path, str) or not path:
        raise MemoryRefused("a path under /memories is required")
    if has_control_characters(path):
        raise MemoryRefused(f"Path {path!r} has a control character")
    if len(path.encode("utf-8")) > MAX_PATH_BYTES:
        raise MemoryRefused(f"Path is longer than {MAX_PATH_BYTES} bytes")
    if path != ROOT and not path.startswith(ROOT + "/"):
        raise MemoryRefused(f"Path must start with /memories, got: {path}")
    parts = path[len(ROOT) :].split("/")[1:]
    if parts and parts[-1] == "":
        parts.pop()  # a folder written with its slash
    for part in parts:
        if part in ("", ".", ".."):
            raise MemoryRefused(f"Path {path} would escape /memories directory")
    canonical = ROOT + "".join(f"/{part}" for part in parts)
    if canonical == ROOT and not root:
        raise MemoryRefused("Cannot change the /memories directory itself")
    return canonical


def split(text: str) -> list[str]:
    return text.split("\n")


def attribute(old_text: str, old_lines: Lines, new_text: str, write_id: int) -> Lines:
    """Where each line of ``new_text`` came from, after write ``write_id`` changed ``old_text``:
    a line kept keeps its writes; a new line is the write's; a line that replaced others
    keeps theirs too (it may hold their words, and a forget of one of them removes it)."""
    old, new = split(old_text), split(new_text)
    if len(old_lines) != len(old):
        old_lines = tuple(() for _ in old)
    result: list[tuple[int, ...]] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            result.extend(old_lines[i1:i2])
        elif tag == "insert":
            result.extend([(write_id,)] * (j2 - j1))
        elif tag == "replace":
            inherited = tuple(sorted({w for ids in old_lines[i1:i2] for w in ids} | {write_id}))
            result.extend([inherited] * (j2 - j1))
    return tuple(result)


def without(text: str, lines: Lines, forgotten: set[int]) -> tuple[str, Lines]:
    """``text`` without the lines that came from a ``forgotten`` write."""
    kept = [
        (line, ids)
        for line, ids in zip(split(text), lines, strict=False)
        if not set(ids) & forgotten
    ]
    return "\n".join(line for line, _ in kept), tuple(ids for _, ids in kept)


def format_size(size: int) -> str:
    """The SDK's sizes: 0B, 512B, 1.5K, 2M."""
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**index)
    return f"{int(value)}{units[index]}" if value == int(value) else f"{value:.1f}{units[index]}"


def view_file(path: str, text: str, view_range: object = None) -> str:
    lines = split(text)
    start = 1
    if view_range is not None:
        if (
            not isinstance(view_range, list)
            or len(view_range) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in view_range)
        ):
            raise MemoryRefused("view_range must be two line numbers, [start, end] (end -1: last)")
        first, last = view_range
        start = max(1, first)
        lines = lines[start - 1 : len(lines) if last == -1 else last]
    numbered = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, start)]
    return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)


def view_folder(path: str, files: Sequence[MemoryFile]) -> str:
    """Files and folders up to 2 levels deep below ``path``, hidden ones left out."""
    base = len(path.rstrip("/")) + 1
    sizes: dict[str, int] = {}
    for file in files:
        parts = file.path[base:].split("/")
        if any(part.startswith(".") for part in parts):
            continue
        for depth in range(1, min(len(parts), 2) + 1):
            name = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
            sizes[name] = sizes.get(name, 0) + file.size
    header = (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    )
    total = sum(file.size for file in files)
    rows = [f"{format_size(total)}\t{path}"]
    rows += [f"{format_size(size)}\t{path}/{name}" for name, size in sorted(sizes.items())]
    return header + "\n" + "\n".join(rows)


def edit_snippet(text: str, changed_line: int) -> str:
    lines = split(text)
    first, last = max(0, changed_line - 2), min(len(lines), changed_line + 3)
    snippet = [f"{str(n + 1).rjust(LINE_NUMBER_WIDTH)}\t{lines[n]}" for n in range(first, last)]
    return (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n" + "\n".join(snippet)
    )


def profile_section(profile: str, chars: int) -> str:
    """The system prompt's memory section: what the memory is for, and the profile."""
    text = profile[:chars].strip()
    guide = (
        "## Memory\n"
        "You have a memory that outlasts this conversation: the memory tool's files under "
        "/memories. Keep /memories/profile.md a short, true profile of the person you work "
        "for (who they are, what they care about, how they like to be answered): correct what "
        "has become wrong and keep it brief. Keep other notes worth having in later "
        "conversations in other files. With each fact, say in your own words where it came "
        "from (what they said and when). Never store passwords or other secrets."
    )
    if text:
        guide += (
            "\n\nYour profile of the person, as it stood when this conversation began (the "
            f"file may have changed since):\n<profile>\n{text}\n</profile>"
        )
    return guide
