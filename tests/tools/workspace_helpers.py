"""Helpers shared by the workspace tool tests: a registry of the tools, results, file trees."""

from __future__ import annotations

import os
from pathlib import Path

from smarthole.app import App
from smarthole.builtins.workspace import plugin as workspace_plugin
from smarthole.config import Config, WorkspaceSettings
from smarthole.home import Home
from smarthole.plugins import Plugins
from smarthole.tools import ToolRegistry, ToolResult


def workspace_tools(
    home: Path, *, protected: list[str] | None = None, max_write_bytes: int = 1024 * 1024
) -> ToolRegistry:
    """The workspace plugin's tools for ``home``, registered the way the app registers them."""
    settings = WorkspaceSettings(protected=protected or [], max_write_bytes=max_write_bytes)
    app = App(Home(home), Config(workspace=settings), Plugins())
    registry = ToolRegistry()

    def register(function, idempotent=False, name=None, read_only=False):
        tool = registry.register(function, plugin="workspace", idempotent=idempotent, name=name)
        tool.read_only = read_only

    workspace_plugin.register_tools(register=register, app=app)
    return registry


def ok(result: ToolResult) -> str:
    """The text of a result that must have succeeded."""
    assert not result.is_error, result.text
    return result.text


def error(result: ToolResult) -> str:
    """The text of a result that must be an error."""
    assert result.is_error, result.text
    assert result.text.startswith("Error: "), result.text
    return result.text


def write(root: Path, relative: str, content: str | bytes = "") -> Path:
    """Create ``root/relative`` (and its folders) holding ``content``."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def snapshot(folder: Path) -> dict[str, tuple[object, ...]]:
    """Every entry below ``folder``, links not followed: mode, size, mtime, content, link target."""
    state: dict[str, tuple[object, ...]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        link = os.readlink(path) if path.is_symlink() else None
        content = path.read_bytes() if link is None and path.is_file() else None
        state[str(path.relative_to(folder))] = (
            info.st_mode,
            info.st_size,
            info.st_mtime_ns,
            content,
            link,
        )
    return state
