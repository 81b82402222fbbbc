"""Confinement: every path a tool receives is resolved inside the workspace, or refused.

A path is relative to the workspace root, written with ``/``. Refused, each with a message
naming the rule: empty paths (where a file is needed), NUL and control characters,
backslashes, ``~``, absolute paths (``/x``, ``C:/x``, ``//server``), ``..`` segments, the
protected folders at the root (``.git``, ``.smarthole``, ``.obsidian``, those of ``[workspace]
protected``, and ``.trash`` for writes; matched case-insensitively however the path is
spelled), and anything that leads outside the root once symbolic links are resolved.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import PathError

ALWAYS_PROTECTED = (".git", ".smarthole", ".obsidian")
TRASH = ".trash"
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
DRIVE = re.compile(r"^[A-Za-z]:")


class WorkspacePaths:
    """Resolves tool paths against one workspace root."""

    def __init__(self, root: Path, protected: Iterable[str] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        extra = (p.strip().strip("/").lower() for p in protected)
        self.protected = {p for p in (*ALWAYS_PROTECTED, *extra) if p}

    # -- syntax ------------------------------------------------------------------------------

    def normalize(self, raw: object, *, allow_root: bool = False) -> PurePosixPath:
        """The relative path ``raw`` names, after the syntactic rules; may be ``.``."""
        if not isinstance(raw, str):
            raise PathError("the path must be a string")
        if "\x00" in raw:
            raise PathError(f"path {raw!r} contains a NUL byte")
        if CONTROL.search(raw):
            raise PathError(f"path {raw!r} contains a control character")
        if "\\" in raw:
            raise PathError(f"path {raw!r} contains a backslash; separate folders with /")
        text = raw.strip()
        if text.startswith("~"):
            raise PathError(f"path {raw!r} starts with '~'; paths are relative to the workspace")
        if text.startswith("/") or DRIVE.match(text):
            raise PathError(
                f"path {raw!r} is absolute; give a path relative to the workspace, "
                "like 'notes/a.md'"
            )
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise PathError(f"path {raw!r} has a '..' segment; paths must stay in the workspace")
        if not parts and not allow_root:
            raise PathError("the path is empty; name a file or folder in the workspace")
        return PurePosixPath(*parts)

    def check_protected(self, relative: PurePosixPath, *, write: bool) -> None:
        if not relative.parts:
            return
        top = relative.parts[0].lower()
        if top in self.protected or (write and top == TRASH):
            raise PathError(
                f"Access denied: cannot {'change' if write else 'read'} files in "
                f"'{relative.parts[0]}/' (protected folder)"
            )

    # -- resolution --------------------------------------------------------------------------

    def resolve(
        self,
        raw: object,
        *,
        write: bool = False,
        any_case: bool = False,
        allow_root: bool = False,
        link_itself: bool = False,
    ) -> Path:
        """The real path for ``raw``, inside the workspace, or ``PathError``.

        ``any_case`` (reads) finds the single entry matching each part regardless of case when
        there is no exact match; writes always use the exact path. ``link_itself`` (moves and
        deletes) returns a final symbolic link as the link, not what it points to; the link
        must still point inside the workspace.
        """
        relative = self.normalize(raw, allow_root=allow_root)
        self.check_protected(relative, write=write)
        if any_case:
            relative = self._match_case(relative, raw)
            self.check_protected(relative, write=write)
        real = Path(os.path.realpath(self.root.joinpath(*relative.parts)))
        if real != self.root and not real.is_relative_to(self.root):
            raise PathError(f"path {raw!r} leads outside the workspace through a symbolic link")
        self.check_protected(self.relative(real), write=write)
        if link_itself and relative.parts:
            parent = Path(os.path.realpath(self.root.joinpath(*relative.parts[:-1])))
            itself = parent / relative.parts[-1]
            self.check_protected(self.relative(itself), write=write)
            return itself
        return real

    def relative(self, path: Path) -> PurePosixPath:
        """``path`` (inside the root) relative to the root, as shown to the model."""
        return PurePosixPath(path.relative_to(self.root).as_posix())

    def display(self, path: Path) -> str:
        shown = str(self.relative(path))
        return "." if shown in ("", ".") else shown

    def _match_case(self, relative: PurePosixPath, raw: object) -> PurePosixPath:
        current = self.root
        matched: list[str] = []
        for index, part in enumerate(relative.parts):
            if (current / part).exists() or not current.is_dir():
                chosen = part
            else:
                candidates = [e.name for e in os.scandir(current) if e.name.lower() == part.lower()]
                if len(candidates) > 1:
                    kind = "files" if index == len(relative.parts) - 1 else "folders"
                    raise PathError(
                        f"Multiple {kind} match {raw!r} with different casing: "
                        f"{', '.join(sorted(candidates))}; use the exact name"
                    )
                chosen = candidates[0] if candidates else part
            matched.append(chosen)
            current = current / chosen
        return PurePosixPath(*matched) if matched else relative

    def is_visible(self, path: Path, *, trash: bool = False) -> bool:
        """Whether a walk may show ``path``: inside the root, not protected, and not in the
        trash unless ``trash`` (a walk that starts inside it)."""
        real = Path(os.path.realpath(path))
        if real != self.root and not real.is_relative_to(self.root):
            return False
        parts = self.relative(real).parts
        if not parts:
            return True
        top = parts[0].lower()
        return top not in self.protected and (trash or top != TRASH)
