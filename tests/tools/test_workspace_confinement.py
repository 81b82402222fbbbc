"""No path the model can write reads or changes a byte outside the workspace.

Every hostile path below is tried with every tool that takes a path: reading, listing,
inspecting, writing, both kinds of edit, creating a folder, deleting, and moving (as source and
as destination). Each call must come back as an error naming the rule it broke; the secrets
outside the workspace and inside its protected folders must never appear in a result; and the
whole tree (outside, protected folders, trash, the links themselves) must be exactly as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from smarthole.tools import ToolRegistry
from tests.tools.workspace_helpers import error, ok, snapshot, workspace_tools, write

SECRET = "TOP-SECRET-OUTSIDE-THE-WORKSPACE"
GUARDED = "GUARDED-CONTENT-OF-A-PROTECTED-FOLDER"

DOTS = "'..' segments are not allowed"
ABSOLUTE = "is absolute"
TILDE = "starts with '~'"
BACKSLASH = "contains a backslash"
NUL = "contains a NUL byte"
CONTROL = "contains a control character"
SYSTEM = "protected system folder"
CONFIGURED = "listed in [workspace] protected"
LINK_OUT = "leaves the workspace through a symbolic link"
TRASH = "the trash can be read but not changed"

# (path, the rule the refusal must name); "{outside}" is the real sentinel folder.
HOSTILE = [
    # '..' in every position and spelling
    ("../outside/secret.txt", DOTS),
    ("notes/../../outside/secret.txt", DOTS),
    ("..", DOTS),
    ("../", DOTS),
    ("./../outside/secret.txt", DOTS),
    ("notes/..//../outside", DOTS),
    ("a/b/../../../outside/secret.txt", DOTS),
    ("notes/..", DOTS),
    ("notes/../.git/config", DOTS),
    (" ../outside/secret.txt", DOTS),
    # absolute paths, POSIX, Windows and UNC
    ("/etc/passwd", ABSOLUTE),
    ("//etc/passwd", ABSOLUTE),
    ("/", ABSOLUTE),
    ("{outside}/secret.txt", ABSOLUTE),
    ("//server/share/x.md", ABSOLUTE),
    ("//.obsidian/x", ABSOLUTE),
    ("/.obsidian/x", ABSOLUTE),  # T1
    ("C:/Windows/win.ini", ABSOLUTE),
    ("c:secret.txt", ABSOLUTE),
    # home expansion
    ("~/.ssh/id_rsa", TILDE),
    ("~root/.bashrc", TILDE),
    ("~", TILDE),
    ("./~/x.md", TILDE),
    # backslashes
    ("..\\outside\\secret.txt", BACKSLASH),
    ("notes\\..\\..\\x", BACKSLASH),
    ("C:\\Windows\\win.ini", BACKSLASH),
    ("\\\\server\\share", BACKSLASH),
    (".git\\config", BACKSLASH),
    # NUL and other control characters
    ("notes/a.md\x00.txt", NUL),
    ("\x00", NUL),
    ("notes/\nbad.md", CONTROL),
    ("a\tb.md", CONTROL),
    ("notes/\x1b[31mred.md", CONTROL),
    ("del\x7f.md", CONTROL),
    ("next\x85line.md", CONTROL),
    # the system folders at the root, however spelled
    (".git/config", SYSTEM),
    (".GIT/config", SYSTEM),
    ("./.git/config", SYSTEM),
    (".//.git//config", SYSTEM),
    ("././.Git/HEAD", SYSTEM),
    (".git", SYSTEM),
    (".git/", SYSTEM),
    (".git./config", SYSTEM),
    (".\uff47\uff49\uff54/config", SYSTEM),  # fullwidth letters
    (".smarthole/smarthole.db", SYSTEM),
    (".SmartHole/inbox/x", SYSTEM),  # T1
    (".smarthole", SYSTEM),
    (".obsidian/app.json", SYSTEM),  # T1
    (".obsidian", SYSTEM),
    ("./.OBSIDIAN/x", SYSTEM),
    # folders listed in [workspace] protected, including a nested one
    ("Private/diary.md", CONFIGURED),
    ("private/diary.md", CONFIGURED),
    ("./PRIVATE//diary.md", CONFIGURED),
    ("Private", CONFIGURED),
    ("Archive/Secret/plan.md", CONFIGURED),
    ("archive/SECRET", CONFIGURED),
    # symbolic links that lead out, anywhere along the path
    ("escape-file", LINK_OUT),
    ("escape-dir/secret.txt", LINK_OUT),
    ("escape-dir", LINK_OUT),
    ("escape-dir/new.md", LINK_OUT),
    ("notes/deep-escape/secret.txt", LINK_OUT),
    ("notes/deep-escape", LINK_OUT),
    ("up/outside/secret.txt", LINK_OUT),
    ("system-root/etc/passwd", LINK_OUT),
    ("dangling-out", LINK_OUT),
    ("chain-1", LINK_OUT),
    ("escape-dir/back-in.md", LINK_OUT),
    ("prefix-trap", LINK_OUT),
    # symbolic links into a protected folder
    ("to-git/config", SYSTEM),
    ("to-git", SYSTEM),
    ("notes/to-private/diary.md", CONFIGURED),
]

# The trash may be read and listed, never written, moved into or out of, or deleted from.
TRASH_PATHS = [".trash/old.md", "./.Trash/old.md", ".trash", ".TRASH/", "to-trash/old.md"]

# Names that only look protected or hostile; they are ordinary files.
LOOKALIKES = [
    "notes/.obsidian/x.md",  # T1
    "my.obsidian.notes/a.md",  # T1
    "notes/.git/x.md",
    ".gitignore",
    ".github/workflows/ci.yml",
    ".trashcan/x.md",
    "Private-notes/x.md",
    "notes/~draft.md",
    "notes/..hidden.md",
    "notes/a..b.md",
    "notes/café ☕.md",
]


@pytest.fixture
def world(tmp_path) -> tuple[Path, Path, ToolRegistry]:
    """A workspace full of traps beside a sentinel folder of secrets."""
    outside = tmp_path / "outside"
    write(outside, "secret.txt", SECRET)
    write(outside, "sub/deeper.md", SECRET)
    write(tmp_path / "home", "workspace-evil/x.md", SECRET)
    tools = workspace_tools(tmp_path / "home", protected=["Private", "Archive/Secret/"])
    root = tmp_path / "home" / "workspace"
    write(root, "notes/a.md", "allowed note\n")
    for folder in (".git", ".smarthole", ".obsidian", "Private", "Archive/Secret"):
        write(root, f"{folder}/config", GUARDED)
    write(root, ".git/HEAD", GUARDED)
    write(root, "Private/diary.md", GUARDED)
    write(root, ".trash/old.md", "trashed\n")
    links = {
        "escape-file": outside / "secret.txt",
        "escape-dir": outside,
        "notes/deep-escape": outside,
        "up": root.parent,
        "system-root": Path("/"),
        "dangling-out": outside / "not-yet.txt",
        "chain-1": root / "chain-2",
        "chain-2": outside / "secret.txt",
        "prefix-trap": root.parent / "workspace-evil" / "x.md",
        "to-git": root / ".git",
        "notes/to-private": root / "Private",
        "to-trash": root / ".trash",
        "notes/inside-link.md": root / "notes" / "a.md",
        "shortcut": root / "notes",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    (outside / "back-in.md").symlink_to(root / "notes" / "a.md")
    return tmp_path, root, tools


def operations(path: str) -> list[tuple[str, dict[str, object]]]:
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


WRITES = {"write_file", "edit_file", "create_folder", "delete_file", "move_file"}


def assert_refused(tools, tmp_path, name, arguments, rule):
    before = snapshot(tmp_path)
    text = error(tools.get(name).call(arguments, None))
    assert rule in text, f"{name}({arguments!r}) gave {text!r}"
    assert SECRET not in text and GUARDED not in text
    assert snapshot(tmp_path) == before, f"{name}({arguments!r}) changed files"


def test_there_are_at_least_thirty_hostile_paths():
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize(("path", "rule"), HOSTILE, ids=[repr(p) for p, _ in HOSTILE])
def test_hostile_paths_are_refused_by_every_tool(world, path, rule):
    tmp_path, root, tools = world
    path = path.format(outside=tmp_path / "outside")
    for name, arguments in operations(path):
        assert_refused(tools, tmp_path, name, arguments, rule)
    assert (root / "notes/a.md").read_text() == "allowed note\n"


def test_a_protected_name_is_refused_however_it_is_reached(tmp_path):
    """A protected folder that is itself a link, reached through a link to the root."""
    tools = workspace_tools(tmp_path / "home")
    root = tmp_path / "home" / "workspace"
    write(root, "git-data/config", GUARDED)
    (root / ".git").symlink_to(root / "git-data")
    (root / "here").symlink_to(root)
    for path in (".git/config", "here/.git/config", "here/here/.GIT/config", "here/.git"):
        for name, arguments in operations(path):
            assert_refused(tools, tmp_path, name, arguments, SYSTEM)
    listing = ok(tools.get("list_files").call({"pattern": "**"}, None))
    assert ".git" not in listing and "[folder] git-data/" in listing


def test_protected_folders_are_refused_with_the_reference_message(world):  # T1
    _, _, tools = world
    text = error(tools.get("read_file").call({"path": ".obsidian/app.json"}, None))
    assert text == (
        "Error: Access denied: Cannot access files in '.obsidian/' directory "
        "(protected system folder)"
    )


def test_dots_are_refused_with_a_message_naming_the_rule(world):
    _, _, tools = world
    text = error(tools.get("read_file").call({"path": "../x"}, None))
    assert text == "Error: path '../x' leaves the workspace ('..' segments are not allowed)"


@pytest.mark.parametrize("path", TRASH_PATHS)
def test_the_trash_can_be_read_but_not_changed(world, path):
    tmp_path, _, tools = world
    if path.rstrip("/").lower().endswith("old.md"):
        assert ok(tools.get("read_file").call({"path": path}, None)) == "1: trashed"
    else:
        assert "old.md" in ok(tools.get("list_files").call({"path": path}, None))
    for name, arguments in operations(path):
        if name in WRITES:
            assert_refused(tools, tmp_path, name, arguments, TRASH)


@pytest.mark.parametrize("path", LOOKALIKES)
def test_names_that_only_look_protected_are_ordinary(world, path):
    _, root, tools = world
    ok(tools.get("write_file").call({"path": path, "content": "fine"}, None))
    assert (root / path).read_text() == "fine"
    assert ok(tools.get("read_file").call({"path": path}, None)) == "1: fine"
    ok(tools.get("delete_file").call({"path": path}, None))
    assert (root / ".trash" / path).read_text() == "fine"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read_file", {"path": "notes/inside-link.md"}, "1: allowed note"),
        ("read_file", {"path": "shortcut/a.md"}, "1: allowed note"),
        ("read_file", {"path": "SHORTCUT/A.md"}, "1: allowed note"),
        ("get_file_info", {"path": "notes/inside-link.md"}, "File: notes/a.md\n"),
        ("list_files", {"path": "shortcut"}, "[file] notes/a.md"),
        ("write_file", {"path": "shortcut/new.md", "content": "x"}, 'Created file "notes/new.md"'),
    ],
)
def test_links_that_stay_inside_are_followed(world, name, arguments, expected):
    _, _, tools = world
    assert expected in ok(tools.get(name).call(arguments, None))


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search_files", {"pattern": "SECRET|GUARDED"}),
        ("search_files", {"pattern": ".", "file_pattern": "**"}),
        ("search_files", {"pattern": ".", "file_pattern": "*"}),
        ("search_files", {"pattern": ".", "file_pattern": "../outside/*"}),
        ("search_files", {"pattern": ".", "file_pattern": "/**"}),
        ("search_files", {"pattern": ".", "file_pattern": "**/*.txt"}),
        ("list_files", {"pattern": "**"}),
        ("list_files", {"pattern": "../**"}),
        ("list_files", {"pattern": "**", "path": "notes"}),
        ("list_files", {"pattern": "**", "path": "shortcut"}),
    ],
)
def test_searching_and_listing_never_reach_outside_or_protected(world, name, arguments):
    tmp_path, _, tools = world
    before = snapshot(tmp_path)
    result = tools.get(name).call(arguments, None)
    for hidden in (SECRET, GUARDED, "secret.txt", "deeper.md", "escape", ".git/", "Private/"):
        assert hidden not in result.text, f"{name}({arguments}) showed {hidden!r}"
    assert "chain-" not in result.text and "prefix-trap" not in result.text
    assert snapshot(tmp_path) == before
