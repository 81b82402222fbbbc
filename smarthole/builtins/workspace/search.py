"""Globs and line search for the workspace tools."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

MAX_EXCERPTS = 5
MAX_SEARCH_BYTES = 5 * 1024 * 1024


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A case-insensitive regex for a glob: ``*`` and ``?`` stay within a folder, ``**``
    crosses folders (``**/`` also matches no folder at all)."""
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out) + r"\Z", re.IGNORECASE)


@dataclass
class FileMatch:
    """The excerpts of one file: runs of (line number, text, is a match)."""

    path: str
    excerpts: list[list[tuple[int, str, bool]]] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"## {self.path}"]
        for number, excerpt in enumerate(self.excerpts):
            if number:
                lines.append("...")
            for line, text, matched in excerpt:
                lines.append(f"Line {line}: {'> ' if matched else '  '}{text}")
        return "\n".join(lines)


def search_text(file: Path, shown: str, regex: re.Pattern[str], context: int) -> FileMatch | None:
    """Up to five excerpts of ``file`` around lines matching ``regex``, overlaps merged."""
    try:
        if file.stat().st_size > MAX_SEARCH_BYTES:
            return None
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    hits = [index for index, line in enumerate(lines) if regex.search(line)]
    if not hits:
        return None
    windows: list[list[int]] = []
    for hit in hits:
        start, end = max(0, hit - context), min(len(lines) - 1, hit + context)
        if windows and start <= windows[-1][1] + 1:
            windows[-1][1] = max(windows[-1][1], end)
        elif len(windows) < MAX_EXCERPTS:
            windows.append([start, end])
        else:
            break
    matched = set(hits)
    return FileMatch(
        shown,
        [
            [(i + 1, lines[i], i in matched) for i in range(start, end + 1)]
            for start, end in windows
        ],
    )
