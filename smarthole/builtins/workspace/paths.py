"""Confinement: every path a tool receives is resolved inside the workspace, or refused.

A path is relative to the workspace root and written with ``/``. Refused, each with a message
naming the rule: empty paths (where a file is needed), NUL and other control characters,
backslashes, a leading ``~``, absolute paths (``/x``, ``C:/x``, ``//server/share``), ``..``
segments, the protected folders at the root (``.git``, ``.smarthole``, ``.obsidian``, those of
``[workspace] protected``, and ``.trash`` for writes), and any path that passes through a
symbolic link leading outside the workspace.

Protected folders are compared case-insensitively (and width- and trailing-dot-insensitively)
after normalisation, so ``./.GIT//x`` is caught, and compared again after each symbolic link is
resolved, so a link to ``.git`` is caught too. Resolution checks every prefix of the path, not
just the whole: a link out and back in (``out/back-in.md``) is still a way out, and a
protected name reached through a link to the root (``here/.git``) is still protected.

Also here, so that the tools module stays about the tools: walking and opening files without
following links out.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from ...errors import PathError, ToolError

logger = logging.getLogger(__name__)

ALWAYS_PROTECTED = (".git", ".smarthole", ".obsidian")
TRASH = ".trash"
DRIVE = re.compile(r"^[A-Za-z]:")
# O_NOFOLLOW: never follow a link swapped in after resolution; O_NONBLOCK: a FIFO planted in
# the workspace must not hang the tool before we see it is not a regular file.
READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def name_key(name: str) -> str:
    """How a folder name compares with a protected one.

    Case-, width- and trailing-dot-insensitive, so spellings that some filesystem treats as
    the same folder (``.GIT`` on macOS, ``.git.`` on Windows) are refused as well.
    """
    return unicodedata.normalize("NFKC", name).casefold().rstrip(". ")


@dataclass(frozen=True)
class Protection:
    """One protected folder: the keys of its parts, how it is shown, and why it is protected."""

    keys: tuple[str, ...]
    name: str
    rule: str
    writes_only: bool = False

    def covers(self, parts: tuple[str, ...]) -> bool:
        return tuple(name_key(p) for p in parts[: len(self.keys)]) == self.keys


@dataclass(frozen=True)
class Entry:
    """A file or folder found by :meth:`WorkspacePaths.walk`."""

    path: Path  # as walked, without following links: what the model is shown
    real: Path  # links resolved: what is opened
    is_dir: bool
    size: int
    mtime: float


class WorkspacePaths:
    """Resolves tool paths against one workspace root, refusing any that break a rule."""

    def __init__(self, root: Path, protected: Iterable[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.protections = [
            Protection((name_key(n),), n, "protected system folder") for n in ALWAYS_PROTECTED
        ]
        for folder in protected:
            parts = [p for p in folder.strip().split("/") if p not in ("", ".")]
            if not parts or ".." in parts:
                logger.warning("ignoring [workspace] protected entry %r", folder)
                continue
            self.protections.append(
                Protection(
                    tuple(name_key(p) for p in parts),
                    "/".join(parts),
                    "protected folder, listed in [workspace] protected",
                )
            )
        self.trash = Protection(
            (TRASH,), TRASH, "protected folder: the trash can be read but not changed", True
        )

    # -- rules ------------------------------------------------------------------------------

    def normalize(self, raw: str, *, allow_root: bool = False) -> PurePosixPath:
        """The relative path ``raw`` names, after the rules that need no filesystem."""
        if not isinstance(raw, str):
            raise PathError("the path must be a string")
        if "\x00" in raw:
            raise PathError(
                f"path {raw!r} contains a NUL byte (control characters are not allowed)"
            )
        if any(unicodedata.category(char) == "Cc" for char in raw):
            raise PathError(f"path {raw!r} contains a control character (not allowed in paths)")
        if "\\" in raw:
            raise PathError(
                f"path {raw!r} contains a backslash (separate folders with '/', like 'notes/a.md')"
            )
        text = raw.strip(" ")
        if text.startswith("/") or DRIVE.match(text):
            raise PathError(
                f"path {raw!r} is absolute (paths are relative to the workspace, like 'notes/a.md')"
            )
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise PathError(f"path {raw!r} leaves the workspace ('..' segments are not allowed)")
        if parts and parts[0].startswith("~"):
            raise PathError(
                f"path {raw!r} starts with '~' (home folders are not expanded; "
                "paths are relative to the workspace)"
            )
        if not parts and not allow_root:
            if text:
                raise PathError(
                    f"path {raw!r} is the workspace itself (name a file or folder in it)"
                )
            raise PathError("the path is empty (name a file or folder in the workspace)")
        return PurePosixPath(*parts)

    def protection(self, parts: tuple[str, ...], *, write: bool) -> Protection | None:
        """The protected folder ``parts`` (relative to the root) lies in, if any."""
        for protection in (*self.protections, self.trash):
            if (write or not protection.writes_only) and protection.covers(parts):
                return protection
        return None

    def check_protected(self, parts: tuple[str, ...], *, write: bool) -> None:
        found = self.protection(parts, write=write)
        if found is not None:
            verb = "change" if found.writes_only else "access"
            raise PathError(
                f"Access denied: Cannot {verb} files in '{found.name}/' directory ({found.rule})"
            )

    # -- resolution -------------------------------------------------------------------------

    def resolve(
        self,
        raw: str,
        *,
        write: bool = False,
        any_case: bool = False,
        allow_root: bool = False,
        link_itself: bool = False,
    ) -> Path:
        """The real path ``raw`` names inside the workspace, or ``PathError``.

        Each step is checked twice: as named from the real folder before it (so a protected name
        reached through a link to the root is caught) and with links resolved (which must stay
        inside the root and out of the protected folders). ``any_case`` (reads) takes, at each
        level without an exact match, the one entry matching regardless of case.
        ``link_itself`` (moves, deletes) returns a final symbolic link as the link, not its
        target; the target must still be inside.
        """
        relative = self.normalize(raw, allow_root=allow_root)
        self.check_protected(relative.parts, write=write)
        step = current = self.root
        for index, part in enumerate(relative.parts):
            name = part
            if any_case:
                name = self._pick_case(current, part, raw, index == len(relative.parts) - 1)
            step = current / name
            self._confine(step, raw, write=write)
            current = Path(os.path.realpath(step))
            self._confine(current, raw, write=write)
        return step if link_itself else current

    def _confine(self, path: Path, raw: str, *, write: bool) -> None:
        if not self.contains(path):
            raise PathError(
                f"path {raw!r} leaves the workspace through a symbolic link "
                "(links must point inside the workspace)"
            )
        self.check_protected(self.relative(path).parts, write=write)

    def _pick_case(self, folder: Path, part: str, raw: str, last: bool) -> str:
        """``part``, or the single entry of ``folder`` equal to it but for case."""
        if os.path.lexists(folder / part) or not folder.is_dir():
            return part
        wanted = part.casefold()
        with os.scandir(folder) as entries:
            matches = sorted(e.name for e in entries if e.name.casefold() == wanted)
        if len(matches) > 1:
            kind = "files" if last else "folders"
            raise PathError(
                f'Multiple {kind} match "{raw}" with different casing: '
                f"{', '.join(matches)} (give the exact path)"
            )
        return matches[0] if matches else part

    def contains(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def relative(self, path: Path) -> PurePosixPath:
        """``path`` (inside the root) relative to the root."""
        return PurePosixPath(path.relative_to(self.root).as_posix())

    def display(self, path: Path) -> str:
        """``path`` as the model sees it: relative, ``/``-separated, ``.`` for the root."""
        return str(self.relative(path)) if path != self.root else "."

    # -- walking and opening ----------------------------------------------------------------

    def walk(self, base: Path, *, folders: bool = False) -> list[Entry]:
        """Every regular file (and, with ``folders``, folder) below ``base`` a tool may show.

        Sorted by path. Links are listed when they lead to a visible place inside, never
        descended (so nothing is listed twice and loops end); protected folders are skipped,
        and the trash too unless the walk starts inside it.
        """
        parts = self.relative(base).parts
        in_trash = bool(parts) and name_key(parts[0]) == TRASH
        found: list[Entry] = []
        for folder, dirs, files in os.walk(base):
            current = Path(folder)
            kept = []
            for name in sorted(dirs):
                entry = self._entry(current / name, in_trash)
                if entry is not None and entry.is_dir:
                    kept.append(name)
                    if folders:
                        found.append(entry)
            dirs[:] = kept
            for name in sorted(files):
                entry = self._entry(current / name, in_trash)
                if entry is not None and not entry.is_dir:
                    found.append(entry)
        return found

    def _entry(self, path: Path, in_trash: bool) -> Entry | None:
        real = Path(os.path.realpath(path))
        if not self.contains(real) or any(
            self._hidden(self.relative(p).parts, in_trash) for p in (path, real)
        ):
            return None
        try:
            info = os.stat(real)
        except OSError:  # a dangling link, or something removed meanwhile
            return None
        if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
            return None
        return Entry(path, real, stat.S_ISDIR(info.st_mode), info.st_size, info.st_mtime)

    def _hidden(self, parts: tuple[str, ...], in_trash: bool) -> bool:
        if self.protection(parts, write=False) is not None:
            return True
        return not in_trash and bool(parts) and name_key(parts[0]) == TRASH

    @contextmanager
    def open_file(self, real: Path) -> Iterator[BinaryIO]:
        """Open ``real`` (as :meth:`resolve` returned it) for reading, if it is a regular file."""
        handle = os.fdopen(os.open(real, READ_FLAGS), "rb")
        with handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ToolError(f"'{self.display(real)}' is not a regular file")
            yield handle

    def read_bytes(self, real: Path, limit: int) -> bytes:
        """The content of the regular file ``real``; ``ToolError`` beyond ``limit`` bytes."""
        with self.open_file(real) as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise ToolError(
                f"'{self.display(real)}' is larger than {limit} bytes, too large to read whole"
            )
        return data

    def is_binary(self, real: Path) -> bool:
        """Whether ``real`` looks like a binary file (a NUL byte in its first 8 KiB)."""
        with self.open_file(real) as handle:
            return b"\x00" in handle.read(8192)

    # -- small filesystem steps the tools share -----------------------------------------------

    def existing(self, raw: str, kind: str) -> Path:
        """The real path of an existing file or folder for a read, in any case."""
        target = self.resolve(raw, any_case=True)
        if not target.exists():
            raise ToolError(f"{kind} not found: {raw} (list_files or search_files can find it)")
        return target

    def read_text(self, real: Path, limit: int) -> str:
        """The UTF-8 text of the regular file ``real``."""
        try:
            return self.read_bytes(real, limit).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolError(f"'{self.display(real)}' is not a UTF-8 text file") from exc

    def make_folders(self, folder: Path, raw: str) -> None:
        """Create ``folder`` (inside the root) and its parents, for the path ``raw``."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:
            raise ToolError(f"cannot create the folders of '{raw}': a file is in the way") from exc

    def trash_folder(self, parts: tuple[str, ...]) -> Path:
        """``.trash/<parts>``, created; refused if a link in it would lead a deletion elsewhere."""
        folder = self.root.joinpath(TRASH, *parts)
        if Path(os.path.realpath(folder)) != folder:
            raise ToolError(f"'{self.display(folder)}' is a symbolic link; nothing was deleted")
        self.make_folders(folder, self.display(folder))
        return folder

    def describe(self, error: OSError) -> str:
        """An ``OSError``'s reason, naming the workspace path involved and never a host path."""
        reason = error.strerror or type(error).__name__
        if error.filename is not None:
            name = Path(os.fsdecode(error.filename))
            if name.is_absolute() and self.contains(name):
                return f"{reason}: '{self.display(name)}'"
        return reason
