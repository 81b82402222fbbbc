"""No path the model can write reads or changes a byte outside the workspace.

Every hostile path below is tried with every tool that takes a path, for reading, writing,
editing, moving (as source and as destination) and deleting. Each call must come back as an
error naming the rule it broke, the secret outside must never appear in any result, and the
files outside the workspace (and in its protected folders) must be exactly as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smarthole.app import App
from smarthole.config import Config, Home, WorkspaceSettings
from smarthole.plugins import Plugins
from smarthole.tools import ToolRegistry
from smarthole.tools import workspace as workspace_plugin

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"

# (path, words the refusal must contain)
HOSTILE = [
    ("../outside/secret.txt", "'..' segment"),
    ("notes/../../outside/secret.txt", "'..' segment"),
    ("..", "'..' segment"),
    ("./../outside/secret.txt", "'..' segment"),
    ("notes/..//../outside", "'..' segment"),
    ("a/b/../../../outside/secret.txt", "'..' segment"),
    ("/etc/passwd", "absolute"),
    ("//etc/passwd", "absolute"),
    ("/", "absolute"),
    ("C:/Windows/win.ini", "absolute"),
    ("c:secret.txt", "absolute"),
    ("~/.ssh/id_rsa", "'~'"),
    ("~root/.bashrc", "'~'"),
    ("..\\outside\\secret.txt", "backslash"),
    ("notes\\..\\..\\x", "backslash"),
    ("notes/a.md\x00.txt", "NUL"),
    ("\x00", "NUL"),
    ("notes/\nbad.md", "control character"),
    (".git/config", "protected folder"),
    (".GIT/config", "protected folder"),
    ("./.git/config", "protected folder"),
    (".//.git//config", "protected folder"),
    ("././.Git/HEAD", "protected folder"),
    (".git", "protected folder"),
    (".git/", "protected folder"),
    (".smarthole/smarthole.db", "protected folder"),
    (".SmartHole/inbox/x", "protected folder"),
    (".obsidian/app.json", "protected folder"),
    ("./.OBSIDIAN/x", "protected folder"),
    ("Private/diary.md", "protected folder"),
    ("private/diary.md", "protected folder"),
    ("./PRIVATE//diary.md", "protected folder"),
    ("escape-file", "outside the workspace"),
    ("escape-dir/secret.txt", "outside the workspace"),
    ("escape-dir", "outside the workspace"),
    ("notes/deep-escape/secret.txt", "outside the workspace"),
    ("to-git/config", "protected folder"),
]
WRITE_ONLY_HOSTILE = [
    (".trash/old.md", "protected folder"),
    ("./.Trash/x.md", "protected folder"),
]


@pytest.fixture
def world(tmp_path):
    """A workspace with protected folders and symlinks out, beside a secret folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    home = Home(tmp_path / "home")
    root = home.workspace
    root.mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "notes" / "a.md").write_text("allowed note\n")
    for protected in (".git", ".smarthole", ".obsidian", "Private", ".trash"):
        (root / protected).mkdir()
        (root / protected / "config").write_text(SECRET)
    (root / ".git" / "HEAD").write_text(SECRET)
    (root / ".trash" / "old.md").write_text("trashed")
    (root / "escape-file").symlink_to(outside / "secret.txt")
    (root / "escape-dir").symlink_to(outside)
    (root / "notes" / "deep-escape").symlink_to(outside)
    (root / "to-git").symlink_to(root / ".git")
    (root / "notes" / "inside-link.md").symlink_to(root / "notes" / "a.md")
    config = Config(workspace=WorkspaceSettings(protected=["Private"]))
    app = App(home, config, Plugins())
    registry = ToolRegistry()
    workspace_plugin.register_tools(
        register=lambda fn, idempotent=False: registry.register(fn, plugin="workspace"),
        app=app,
    )
    return tmp_path, root, registry


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every entry below ``folder`` (links not followed): kind, size, mtime, content."""
    state = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        content = path.read_bytes() if path.is_file() and not path.is_symlink() else None
        link = os.readlink(path) if path.is_symlink() else None
        state[str(path)] = (info.st_mode, info.st_size, info.st_mtime_ns, content, link)
    return state


def protected_state(tmp_path: Path, root: Path) -> dict[str, tuple]:
    state = snapshot(tmp_path / "outside")
    for protected in (".git", ".smarthole", ".obsidian", "Private", ".trash"):
        state.update(snapshot(root / protected))
    return state


def operations(path: str) -> list[tuple[str, dict]]:
    """Every way a tool can be pointed at ``path``."""
    return [
        ("read_file", {"path": path}),
        ("get_file_info", {"path": path}),
        ("list_files", {"path": path}),
        ("write_file", {"path": path, "content": "overwritten"}),
        ("edit_file", {"path": path, "old_text": "a", "new_text": "b"}),
        ("edit_file", {"path": path, "insert_after_line": 0, "content": "x"}),
        ("create_folder", {"path": path}),
        ("delete_file", {"path": path}),
        ("move_file", {"source": path, "destination": "notes/moved.md"}),
        ("move_file", {"source": "notes/a.md", "destination": path}),
    ]


def test_there_are_at_least_thirty_hostile_paths():
    assert len(HOSTILE) + len(WRITE_ONLY_HOSTILE) >= 30


@pytest.mark.parametrize(("path", "rule"), HOSTILE, ids=[repr(p) for p, _ in HOSTILE])
def test_hostile_paths_are_refused_everywhere(world, path, rule):
    tmp_path, root, tools = world
    before = protected_state(tmp_path, root)
    for name, arguments in operations(path):
        result = tools.get(name).call(arguments, None)
        assert result.is_error, f"{name}({arguments}) was allowed: {result.text}"
        assert rule in result.text, f"{name}({arguments}): {result.text}"
        assert SECRET not in result.text
        assert protected_state(tmp_path, root) == before, f"{name}({arguments}) changed files"
    assert (root / "notes" / "a.md").read_text() == "allowed note\n"


@pytest.mark.parametrize(("path", "rule"), WRITE_ONLY_HOSTILE)
def test_the_trash_can_be_read_but_not_written(world, path, rule):
    tmp_path, root, tools = world
    before = protected_state(tmp_path, root)
    assert tools.get("read_file").call({"path": ".trash/old.md"}, None).text == "1: trashed"
    writes = [
        op for op in operations(path) if op[0] not in ("read_file", "get_file_info", "list_files")
    ]
    for name, arguments in writes:
        result = tools.get(name).call(arguments, None)
        assert result.is_error and rule in result.text, f"{name}({arguments}): {result.text}"
    assert protected_state(tmp_path, root) == before


def test_searching_and_listing_never_reach_outside(world):
    tmp_path, root, tools = world
    before = protected_state(tmp_path, root)
    for name, arguments in [
        ("search_files", {"pattern": "SECRET"}),
        ("search_files", {"pattern": ".", "file_pattern": "**"}),
        ("search_files", {"pattern": ".", "file_pattern": "**/*.txt"}),
        ("list_files", {"pattern": "**"}),
        ("list_files", {"pattern": "**", "path": "notes"}),
    ]:
        result = tools.get(name).call(arguments, None)
        assert SECRET not in result.text
        assert "secret.txt" not in result.text and ".git" not in result.text
    assert protected_state(tmp_path, root) == before


def test_nested_names_that_only_look_protected_are_allowed(world):
    _, root, tools = world
    for path in ("notes/.obsidian/x.md", "my.obsidian.notes/a.md", "notes/.git-ideas.md"):
        result = tools.get("write_file").call({"path": path, "content": "fine"}, None)
        assert not result.is_error, result.text
        assert (root / path).read_text() == "fine"


def test_a_symlink_inside_the_workspace_may_be_followed(world):
    _, _, tools = world
    result = tools.get("read_file").call({"path": "notes/inside-link.md"}, None)
    assert result.text == "1: allowed note"
