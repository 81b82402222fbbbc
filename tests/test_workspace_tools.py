"""The workspace tools: what each does and says, called the way the agent calls them."""

from __future__ import annotations

from pathlib import Path

import pytest

from smarthole.app import App
from smarthole.config import Config, Home, WorkspaceSettings
from smarthole.plugins import Plugins
from smarthole.tools import ToolRegistry, ToolResult
from smarthole.tools import workspace as workspace_plugin


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "home" / "workspace"


@pytest.fixture
def tools(tmp_path, root) -> ToolRegistry:
    config = Config(workspace=WorkspaceSettings(protected=["Private"], max_write_bytes=1000))
    app = App(Home(tmp_path / "home"), config, Plugins())
    registry = ToolRegistry()
    workspace_plugin.register_tools(
        register=lambda fn, idempotent=False: registry.register(
            fn, plugin="workspace", idempotent=idempotent
        ),
        app=app,
    )
    return registry


@pytest.fixture
def call(tools):
    def run(name: str, **arguments) -> ToolResult:
        return tools.get(name).call(arguments, None)

    return run


def ok(result: ToolResult) -> str:
    assert not result.is_error, result.text
    return result.text


def error(result: ToolResult) -> str:
    assert result.is_error, result.text
    return result.text


def write(root: Path, relative: str, content: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    return path


# -- schemas ----------------------------------------------------------------------------------


def test_every_tool_has_a_described_schema(tools):
    names = {tool.name for tool in tools}
    assert names == {
        "read_file",
        "write_file",
        "edit_file",
        "create_folder",
        "delete_file",
        "move_file",
        "search_files",
        "list_files",
        "get_file_info",
    }
    for tool in tools:
        schema = tool.input_schema
        assert tool.description and schema["type"] == "object"
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_idempotence_is_declared_per_tool(tools):
    assert tools.get("read_file").idempotent and tools.get("write_file").idempotent
    assert not tools.get("edit_file").idempotent
    assert not tools.get("delete_file").idempotent and not tools.get("move_file").idempotent


def test_invalid_arguments_are_an_error_result(call):
    assert "invalid arguments for read_file" in error(call("read_file", start_line=1))
    assert "invalid arguments" in error(call("list_files", max_results="many"))


# -- read_file --------------------------------------------------------------------------------


def test_read_file_numbers_lines(call, root):
    write(root, "notes/a.md", "one\ntwo\nthree\n")
    assert ok(call("read_file", path="notes/a.md")) == "1: one\n2: two\n3: three"


def test_read_file_range_has_a_footer(call, root):
    write(root, "a.md", "\n".join(f"line {n}" for n in range(1, 11)))
    text = ok(call("read_file", path="a.md", start_line=3, end_line=4))
    assert text == "3: line 3\n4: line 4\n\n[Showing lines 3-4 of 10 total]"
    assert "past the end" in error(call("read_file", path="a.md", start_line=11))
    assert "before start_line" in error(call("read_file", path="a.md", start_line=5, end_line=2))
    assert ok(call("read_file", path="a.md", start_line=9, end_line=99)).startswith("9: line 9")


def test_read_file_truncates_long_files(call, root):
    write(root, "long.md", "\n".join(f"l{n}" for n in range(3000)))
    text = ok(call("read_file", path="long.md"))
    assert text.count("\n") == 2001
    assert "[Truncated: showing lines 1-2000 of 3000 total. Use start_line=2001" in text
    write(root, "wide.md", "\n".join("x" * 1000 for _ in range(200)))
    text = ok(call("read_file", path="wide.md"))
    assert "of 200 total" in text and len(text) <= 100_200


@pytest.mark.parametrize("asked", ["projects/readme.md", "PROJECTS/README.MD"])
def test_reads_resolve_case_insensitively(call, root, asked):
    write(root, "Projects/README.md", "hello")
    assert ok(call("read_file", path=asked)) == "1: hello"


def test_ambiguous_case_is_an_error(call, root):
    write(root, "Projects/README.md", "a")
    write(root, "PROJECTS/readme.md", "b")
    assert "Multiple folders match" in error(call("read_file", path="projects/readme.md"))
    assert ok(call("read_file", path="Projects/README.md")) == "1: a"


def test_read_errors(call, root):
    (root / "folder").mkdir(parents=True)
    write(root, "binary.md", "")
    (root / "binary.md").write_bytes(b"\xff\xfe\x00")
    assert error(call("read_file", path="missing.md")) == "Error: File not found: missing.md"
    assert "is a folder" in error(call("read_file", path="folder"))
    assert "not a UTF-8 text file" in error(call("read_file", path="binary.md"))


# -- write_file and edit_file -----------------------------------------------------------------


def test_write_file_creates_then_overwrites(call, root):
    assert (
        ok(call("write_file", path="a/b/c.md", content="hi")) == 'Created file "a/b/c.md" (2 bytes)'
    )
    assert (
        ok(call("write_file", path="a/b/c.md", content="x" * 999))
        == 'Overwrote file "a/b/c.md" (999 bytes)'
    )
    assert (root / "a/b/c.md").read_text() == "x" * 999


def test_writes_are_limited_in_size(call, root):
    assert "limit is 1000 bytes" in error(call("write_file", path="big.md", content="x" * 1001))
    assert not (root / "big.md").exists()


def test_writes_use_exact_paths(call, root):
    write(root, "Notes/a.md", "old")
    ok(call("write_file", path="notes/a.md", content="new"))
    assert (root / "Notes/a.md").read_text() == "old"


def test_edit_file_replaces_text(call, root):
    write(root, "a.md", "cat cat cat\n")
    assert (
        ok(call("edit_file", path="a.md", old_text="cat", new_text="dog"))
        == 'Replaced 1 occurrence(s) in "a.md".'
    )
    assert (
        ok(call("edit_file", path="a.md", old_text="cat", new_text="cow", replace_all=True))
        == 'Replaced 2 occurrence(s) in "a.md".'
    )
    assert (root / "a.md").read_text() == "dog cow cow\n"


def test_edit_file_text_not_found_leaves_the_file(call, root):
    write(root, "a.md", "hello\n")
    assert (
        error(call("edit_file", path="a.md", old_text="bye", new_text="x"))
        == "Error: Text 'bye' not found in a.md"
    )
    assert (root / "a.md").read_text() == "hello\n"


def test_edit_file_line_operations(call, root):
    write(root, "a.md", "one\ntwo\nthree\n")
    assert (
        ok(call("edit_file", path="a.md", insert_after_line=0, content="zero"))
        == 'Inserted 1 line(s) after line 0 in "a.md".'
    )
    assert (
        ok(call("edit_file", path="a.md", insert_before_line=4, content="2.5\n2.7"))
        == 'Inserted 2 line(s) before line 4 in "a.md".'
    )
    assert (root / "a.md").read_text() == "zero\none\ntwo\n2.5\n2.7\nthree\n"
    assert (
        ok(call("edit_file", path="a.md", delete_lines={"start": 4, "end": 5}))
        == 'Deleted lines 4-5 (2 line(s)) in "a.md".'
    )
    assert (root / "a.md").read_text() == "zero\none\ntwo\nthree\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"old_text": "a", "new_text": "b", "insert_after_line": 1, "content": "x"},
            "Cannot mix text replacement",
        ),
        ({}, "Must provide old_text and new_text, or one line operation"),
        (
            {"insert_after_line": 1, "delete_lines": {"start": 1, "end": 1}, "content": "x"},
            "Only one line operation",
        ),
        ({"insert_after_line": 9, "content": "x"}, "Line 9 does not exist in file with 2 lines."),
        ({"insert_before_line": 0, "content": "x"}, "Line 0 does not exist"),
        ({"delete_lines": {"start": 2, "end": 3}}, "Line 3 does not exist"),
        ({"insert_after_line": 1}, "content is required"),
        ({"old_text": "", "new_text": "x"}, "old_text must not be empty"),
    ],
)
def test_edit_file_rules(call, root, arguments, message):
    write(root, "a.md", "one\ntwo\n")
    assert message in error(call("edit_file", path="a.md", **arguments))
    assert (root / "a.md").read_text() == "one\ntwo\n"


def test_edit_file_needs_the_exact_name(call, root):
    write(root, "Notes.md", "x")
    assert "File not found" in error(call("edit_file", path="notes.md", old_text="x", new_text="y"))


# -- folders, deleting, moving ----------------------------------------------------------------


def test_create_folder(call, root):
    assert ok(call("create_folder", path="a/b/")) == 'Created folder "a/b".'
    assert ok(call("create_folder", path="a/b")) == 'Folder "a/b" already exists.'
    write(root, "file.md", "x")
    assert "is a file" in error(call("create_folder", path="file.md"))


def test_delete_moves_to_the_trash_never_deletes(call, root):
    write(root, "notes/a.md", "first")
    assert (
        ok(call("delete_file", path="notes/a.md"))
        == "Deleted 'notes/a.md' (moved to .trash/notes/a.md)."
    )
    write(root, "notes/a.md", "second")
    assert ok(call("delete_file", path="notes/a.md")).endswith("(moved to .trash/notes/a-1.md).")
    assert (root / ".trash/notes/a.md").read_text() == "first"
    assert (root / ".trash/notes/a-1.md").read_text() == "second"
    assert "not found" in error(call("delete_file", path="notes/a.md"))
    write(root, "folder/x.md", "x")
    ok(call("delete_file", path="folder"))
    assert (root / ".trash/folder/x.md").exists()


def test_move_file(call, root):
    write(root, "a.md", "a")
    write(root, "b.md", "b")
    assert (
        ok(call("move_file", source="a.md", destination="new/place.md"))
        == "Moved 'a.md' to 'new/place.md'."
    )
    assert "refusing to overwrite" in error(
        call("move_file", source="new/place.md", destination="b.md")
    )
    assert "same path" in ok(call("move_file", source="b.md", destination="./b.md"))
    assert "not found" in error(call("move_file", source="gone.md", destination="x.md"))
    write(root, "dir/x.md", "x")
    assert "into itself" in error(call("move_file", source="dir", destination="dir/sub"))


# -- search, list, info -----------------------------------------------------------------------


def test_search_files_merges_context(call, root):
    write(root, "a.md", "alpha\nbeta\nmilk\ngamma\nmilk again\ndelta\n")
    write(root, "b.txt", "no match here\n")
    write(root, "c.py", "milk = 1\n")
    text = ok(call("search_files", pattern="milk", context_lines=1))
    assert text == (
        "Found 1 matching file(s):\n\n## a.md\nLine 2:   beta\nLine 3: > milk\n"
        "Line 4:   gamma\nLine 5: > milk again\nLine 6:   delta"
    )
    assert "## c.py" in ok(call("search_files", pattern="milk", file_pattern="*.PY"))
    assert ok(call("search_files", pattern="zzz")) == "No files found matching the pattern."
    assert "Invalid regular expression" in error(call("search_files", pattern="("))


def test_search_files_limits_excerpts_and_files(call, root):
    write(root, "many.md", "\n".join("hit" if n % 10 == 0 else "x" for n in range(100)))
    text = ok(call("search_files", pattern="hit", context_lines=0))
    assert text.count("> hit") == 5
    for n in range(5):
        write(root, f"f{n}.md", "hit")
    assert ok(call("search_files", pattern="hit", max_results=2)).startswith(
        "Found 2 matching file(s)"
    )


def test_search_skips_protected_folders_and_the_trash(call, root):
    write(root, ".git/notes.md", "secret")
    write(root, ".trash/old.md", "secret")
    write(root, "Private/x.md", "secret")
    assert ok(call("search_files", pattern="secret")) == "No files found matching the pattern."


def test_list_files_newest_first(call, root):
    import os

    for n, name in enumerate(["old.md", "mid.md", "new.md"]):
        path = write(root, name, name)
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    (root / "Sub").mkdir()
    os.utime(root / "Sub", (1_600_000_000, 1_600_000_000))
    write(root, ".git/config", "x")
    text = ok(call("list_files"))
    lines = text.splitlines()
    assert lines[0] == "Found 4 item(s) matching '*' in '.':"
    assert [line.split(" ")[1] for line in lines[1:]] == ["new.md", "mid.md", "old.md", "Sub/"]
    assert lines[1].startswith("[file] new.md (modified: ") and lines[4] == "[folder] Sub/"


def test_list_files_patterns_paths_and_limits(call, root):
    write(root, "Projects/a/x.md", "x")
    write(root, "Projects/b.txt", "x")
    assert "[file] Projects/a/x.md" in ok(call("list_files", pattern="**/*.md", path="projects"))
    assert "b.txt" not in ok(call("list_files", pattern="**/*.md", path="Projects"))
    assert "showing the 1 newest" in ok(call("list_files", pattern="**", max_results=1))
    assert "at least 1" in error(call("list_files", max_results=0))
    assert "Folder not found" in error(call("list_files", path="nowhere"))
    many = ok(call("list_files", max_results=5000))
    assert many.startswith("Found")


def test_get_file_info(call, root):
    write(root, "a.md", "x" * 2048)
    text = ok(call("get_file_info", path="A.md"))
    assert text.startswith("File: a.md\nSize: 2.0 KB (2048 bytes)\nCreated: ")
    assert "Modified: " in text
    (root / "folder").mkdir()
    write(root, "folder/one.md", "1")
    assert ok(call("get_file_info", path="folder")).startswith("Folder: folder/\nItems: 1")
    assert "File not found" in error(call("get_file_info", path="nope"))


def test_the_trash_can_be_listed_but_is_hidden_elsewhere(call, root):
    write(root, "notes/a.md", "x")
    ok(call("delete_file", path="notes/a.md"))
    assert ".trash" not in ok(call("list_files", pattern="**"))
    assert "[file] .trash/notes/a.md" in ok(call("list_files", pattern="**", path=".trash"))


def test_moving_or_deleting_a_link_leaves_its_target_alone(call, root):
    write(root, "notes/real.md", "content")
    (root / "notes" / "link.md").symlink_to(root / "notes" / "real.md")
    ok(call("move_file", source="notes/link.md", destination="shortcut.md"))
    assert (root / "shortcut.md").is_symlink() and (root / "notes/real.md").exists()
    ok(call("delete_file", path="shortcut.md"))
    assert (root / ".trash/shortcut.md").is_symlink()
    assert (root / "notes/real.md").read_text() == "content"
