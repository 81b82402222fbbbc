"""The workspace tools: what each does and says, called the way the agent calls them.

Every call goes through ``Tool.call`` with a JSON-like arguments object, as the agent loop
makes it; the reference acceptance cases T1-T5 are marked where they appear.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smarthole.tools import ToolRegistry, ToolResult
from tests.tools.workspace_helpers import error, ok, workspace_tools, write

LIMIT = 1000  # max_write_bytes of these tests
LONG_NAME = "notes/" + "n" * 300


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def root(home) -> Path:
    return home / "workspace"


@pytest.fixture
def tools(home) -> ToolRegistry:
    return workspace_tools(home, protected=["Private"], max_write_bytes=LIMIT)


@pytest.fixture
def call(tools):
    def run(name: str, **arguments) -> ToolResult:
        return tools.get(name).call(arguments, None)

    return run


def set_mtime(path: Path, seconds: int) -> None:
    os.utime(path, (seconds, seconds), follow_symlinks=False)


# -- registration and schemas -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "idempotent"),
    [
        ("read_file", True),
        ("search_files", True),
        ("list_files", True),
        ("get_file_info", True),
        ("write_file", True),
        ("create_folder", True),
        ("edit_file", False),
        ("delete_file", False),
        ("move_file", False),
        ("save_attachment", True),
    ],
)
def test_each_tool_is_registered_with_its_idempotence(tools, name, idempotent):
    assert tools.get(name).idempotent is idempotent
    assert tools.get(name).plugin == "workspace"


def test_there_are_exactly_the_ten_tools(tools):
    assert len(tools) == 10


@pytest.mark.parametrize(
    ("name", "parameters", "required"),
    [
        ("read_file", {"path", "start_line", "end_line"}, ["path"]),
        ("write_file", {"path", "content"}, ["path", "content"]),
        (
            "edit_file",
            {
                "path",
                "old_text",
                "new_text",
                "replace_all",
                "insert_after_line",
                "insert_before_line",
                "delete_lines",
                "content",
            },
            ["path"],
        ),
        ("create_folder", {"path"}, ["path"]),
        ("delete_file", {"path"}, ["path"]),
        ("move_file", {"source", "destination"}, ["source", "destination"]),
        ("search_files", {"pattern", "file_pattern", "context_lines", "max_results"}, ["pattern"]),
        ("list_files", {"pattern", "path", "max_results"}, []),
        ("get_file_info", {"path"}, ["path"]),
    ],
)
def test_schemas_have_described_parameters(tools, name, parameters, required):
    tool = tools.get(name)
    schema = tool.input_schema
    assert set(schema["properties"]) == parameters
    assert schema.get("required", []) == required
    for parameter, prop in schema["properties"].items():
        assert prop.get("description"), f"{name}.{parameter} has no description"
    assert tool.description and ":param" not in tool.description


def test_delete_lines_is_an_object_of_start_and_end(tools):
    schema = tools.get("edit_file").input_schema
    line_range = schema["$defs"]["LineRange"]
    assert line_range["type"] == "object"
    assert set(line_range["properties"]) == {"start", "end"}
    assert set(line_range["required"]) == {"start", "end"}


@pytest.mark.parametrize(
    ("name", "arguments", "complaint"),
    [
        ("read_file", {}, "path: Field required"),
        ("read_file", {"path": 3}, "path: Input should be a valid string"),
        ("read_file", {"path": "a.md", "start_line": "first"}, "start_line"),
        ("read_file", {"path": "a.md", "follow": True}, "follow: Extra inputs"),
        ("write_file", {"path": "a.md"}, "content: Field required"),
        ("list_files", {"max_results": "many"}, "max_results"),
        ("edit_file", {"path": "a.md", "delete_lines": {"start": 1}}, "delete_lines.end"),
        ("edit_file", {"path": "a.md", "delete_lines": [1, 2]}, "delete_lines"),
    ],
)
def test_invalid_arguments_become_error_results(call, name, arguments, complaint):
    text = error(call(name, **arguments))
    assert f"invalid arguments for {name}" in text and complaint in text


def test_registering_creates_the_workspace_folder(tmp_path):
    workspace_tools(tmp_path / "new-home")
    assert (tmp_path / "new-home" / "workspace").is_dir()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("write_file", {"path": LONG_NAME, "content": "x"}),
        ("create_folder", {"path": LONG_NAME}),
        ("move_file", {"source": "a.md", "destination": LONG_NAME}),
    ],
)
def test_filesystem_errors_name_workspace_paths_never_host_paths(
    call, root, tmp_path, name, arguments
):
    write(root, "a.md", "a")
    text = error(call(name, **arguments))
    assert text.startswith("Error: File name too long: 'notes/")
    assert str(tmp_path) not in text


# -- read_file --------------------------------------------------------------------------------


def test_read_file_numbers_lines(call, root):
    write(root, "notes/a.md", "one\ntwo\n\nfour\n")
    assert ok(call("read_file", path="notes/a.md")) == "1: one\n2: two\n3: \n4: four"


def test_read_file_shows_crlf_lines_without_their_ending(call, root):
    write(root, "dos.md", b"one\r\ntwo\r\n")
    assert ok(call("read_file", path="dos.md")) == "1: one\n2: two"


def test_read_file_of_an_empty_file(call, root):
    write(root, "empty.md", "")
    assert ok(call("read_file", path="empty.md")) == 'File "empty.md" is empty.'


TEN_LINES = "\n".join(f"line {n}" for n in range(1, 11)) + "\n"


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (3, 4, "3: line 3\n4: line 4\n\n[Showing lines 3-4 of 10 total]"),
        (9, None, "9: line 9\n10: line 10\n\n[Showing lines 9-10 of 10 total]"),
        (None, 2, "1: line 1\n2: line 2\n\n[Showing lines 1-2 of 10 total]"),
        (10, 99, "10: line 10\n\n[Showing lines 10-10 of 10 total]"),
        (0, 1, "1: line 1\n\n[Showing lines 1-1 of 10 total]"),
        (-5, 1, "1: line 1\n\n[Showing lines 1-1 of 10 total]"),
    ],
)
def test_read_file_ranges_are_clamped_and_have_a_footer(call, root, start, end, expected):
    write(root, "a.md", TEN_LINES)
    arguments = {k: v for k, v in {"start_line": start, "end_line": end}.items() if v is not None}
    assert ok(call("read_file", path="a.md", **arguments)) == expected


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (11, None, "start_line 11 is past the end of the file (10 lines)"),
        (5, 2, "end_line 2 is before start_line 5"),
        (1, 0, "end_line 0 is before start_line 1"),
    ],
)
def test_read_file_bad_ranges_are_errors(call, root, start, end, message):
    write(root, "a.md", TEN_LINES)
    arguments = {k: v for k, v in {"start_line": start, "end_line": end}.items() if v is not None}
    assert error(call("read_file", path="a.md", **arguments)) == f"Error: {message}"


def test_read_file_truncates_at_2000_lines(call, root):
    write(root, "long.md", "\n".join(f"l{n}" for n in range(1, 3001)))
    lines = ok(call("read_file", path="long.md")).split("\n")
    assert lines[0] == "1: l1" and lines[1999] == "2000: l2000"
    assert lines[-1] == (
        "[Truncated: showing lines 1-2000 of 3000 total. Use start_line=2001 to read on.]"
    )
    rest = ok(call("read_file", path="long.md", start_line=2001)).split("\n")
    assert rest[0] == "2001: l2001" and rest[-1] == "[Showing lines 2001-3000 of 3000 total]"


def test_read_file_truncates_at_100000_characters(call, root):
    write(root, "wide.md", "\n".join("x" * 997 for _ in range(200)))  # 1002 chars numbered
    text = ok(call("read_file", path="wide.md"))
    assert len(text) <= 100_000 + 200
    assert text.endswith(
        "[Truncated: showing lines 1-99 of 200 total. Use start_line=100 to read on.]"
    )


def test_read_file_cuts_a_single_line_longer_than_the_budget(call, root):
    write(root, "one.md", "y" * 150_000 + "\nnext\n")
    text = ok(call("read_file", path="one.md"))
    assert text.startswith("1: yyy") and len(text) < 100_200
    assert text.endswith(
        "[Truncated: showing lines 1-1 of 2 total; line 1 is cut at 100000 characters. "
        "Use start_line=2 to read on.]"
    )
    assert ok(call("read_file", path="one.md", start_line=2)).startswith("2: next")


@pytest.mark.parametrize(
    "asked",
    ["projects/readme.md", "PROJECTS/README.MD", "Projects/readme.md", "./projects//README.md"],
)
def test_reads_find_a_file_whatever_its_case(call, root, asked):  # T2
    write(root, "Projects/README.md", "hello")
    assert ok(call("read_file", path=asked)) == "1: hello"
    assert ok(call("get_file_info", path=asked)).startswith("File: Projects/README.md\n")


def test_an_exact_match_wins_over_other_casings(call, root):
    write(root, "notes/a.md", "lower")
    write(root, "notes/A.md", "upper")
    assert ok(call("read_file", path="notes/A.md")) == "1: upper"
    assert ok(call("read_file", path="notes/a.md")) == "1: lower"


@pytest.mark.parametrize(
    ("files", "asked", "message"),
    [
        (
            ["Projects/README.md", "PROJECTS/readme.md"],
            "projects/readme.md",
            'Multiple folders match "projects/readme.md" with different casing: PROJECTS, Projects',
        ),
        (
            ["notes/Todo.md", "notes/TODO.md"],
            "notes/todo.md",
            'Multiple files match "notes/todo.md" with different casing: TODO.md, Todo.md',
        ),
    ],
)
def test_ambiguous_casing_is_an_error(call, root, files, asked, message):  # T2
    for number, name in enumerate(files):
        write(root, name, str(number))
    assert message in error(call("read_file", path=asked))
    assert message in error(call("get_file_info", path=asked))


def test_writes_never_match_another_case(call, root):
    write(root, "Notes/a.md", "old")
    ok(call("write_file", path="notes/a.md", content="new"))
    assert (root / "Notes/a.md").read_text() == "old"
    assert (root / "notes/a.md").read_text() == "new"


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (None, "missing.md", "File not found: missing.md"),
        ("folder", "folder", "'folder' is a folder; use list_files"),
        ("binary", "binary.md", "'binary.md' is not a UTF-8 text file"),
        ("fifo", "pipe.md", "'pipe.md' is not a regular file"),
    ],
)
def test_read_file_errors(call, root, setup, path, message):
    if setup == "folder":
        (root / "folder").mkdir()
    elif setup == "binary":
        write(root, "binary.md", b"\xff\xfe\x00abc")
    elif setup == "fifo":
        os.mkfifo(root / "pipe.md")
    assert message in error(call("read_file", path=path))


# -- write_file -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "size"),
    [("", "0 bytes"), ("hi", "2 bytes"), ("é" * 500, "1000 bytes")],
)
def test_write_file_creates_with_parents_and_reports_the_size(call, root, content, size):
    assert ok(call("write_file", path="a/b/c.md", content=content)) == (
        f'Created file "a/b/c.md" ({size})'
    )
    assert (root / "a/b/c.md").read_text() == content


def test_write_file_overwrites(call, root):
    write(root, "a.md", "old")
    assert ok(call("write_file", path="a.md", content="x" * 999)) == (
        'Overwrote file "a.md" (999 bytes)'
    )
    assert (root / "a.md").read_text() == "x" * 999
    assert sorted(p.name for p in root.iterdir()) == ["a.md"]  # no temp file left behind


def test_sizes_over_a_kilobyte_are_shown_in_kb(home):
    tools = workspace_tools(home, max_write_bytes=1024 * 1024)
    result = tools.get("write_file").call({"path": "big.md", "content": "x" * 1536}, None)
    assert ok(result) == 'Created file "big.md" (1.5 KB)'


@pytest.mark.parametrize("content", ["x" * (LIMIT + 1), "é" * 501])
def test_write_file_refuses_content_over_the_limit(call, root, content):
    text = error(call("write_file", path="big.md", content=content))
    assert f"the limit is {LIMIT} bytes ([workspace] max_write_bytes)" in text
    assert not (root / "big.md").exists()


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        ("folder", "folder", "'folder' is a folder; choose a file name"),
        ("file", "file.md/inner.md", "cannot create the folders of 'file.md/inner.md'"),
        (None, "", "the path is empty"),
        (None, "./", "path './' is the workspace itself"),
    ],
)
def test_write_file_errors(call, root, setup, path, message):
    if setup == "folder":
        (root / "folder").mkdir()
    elif setup == "file":
        write(root, "file.md", "x")
    assert message in error(call("write_file", path=path, content="x"))


def test_writing_through_an_inside_link_changes_its_target(call, root):
    write(root, "notes/real.md", "old")
    (root / "alias.md").symlink_to(root / "notes/real.md")
    assert ok(call("write_file", path="alias.md", content="new")) == (
        'Overwrote file "notes/real.md" (3 bytes)'
    )
    assert (root / "alias.md").is_symlink() and (root / "notes/real.md").read_text() == "new"


# -- edit_file --------------------------------------------------------------------------------


def test_edit_file_replaces_the_first_occurrence(call, root):
    write(root, "a.md", "cat cat cat\n")
    assert ok(call("edit_file", path="a.md", old_text="cat", new_text="dog")) == (
        'Replaced 1 occurrence(s) in "a.md".'
    )
    assert (root / "a.md").read_text() == "dog cat cat\n"


def test_edit_file_replaces_every_occurrence(call, root):  # T3
    write(root, "a.md", "cat cat cat\n")
    result = call("edit_file", path="a.md", old_text="cat", new_text="", replace_all=True)
    assert ok(result) == 'Replaced 3 occurrence(s) in "a.md".'
    assert (root / "a.md").read_text() == "  \n"


def test_edit_file_text_not_found_leaves_the_file(call, root):  # T3
    write(root, "notes/a.md", "hello\n")
    before = (root / "notes/a.md").stat().st_mtime_ns
    assert error(call("edit_file", path="notes/a.md", old_text="bye", new_text="x")) == (
        "Error: Text 'bye' not found in a.md"
    )
    assert (root / "notes/a.md").read_text() == "hello\n"
    assert (root / "notes/a.md").stat().st_mtime_ns == before


@pytest.mark.parametrize(
    ("original", "arguments", "expected", "message"),
    [
        (
            "one\ntwo\n",
            {"insert_after_line": 0, "content": "zero"},
            "zero\none\ntwo\n",
            "Inserted 1 line(s) after line 0",
        ),
        (
            "one\ntwo\n",
            {"insert_after_line": 2, "content": "three\nfour\n"},
            "one\ntwo\nthree\nfour\n",
            "Inserted 2 line(s) after line 2",
        ),
        (
            "one\ntwo",
            {"insert_after_line": 2, "content": "three"},
            "one\ntwo\nthree",
            "Inserted 1 line(s) after line 2",
        ),
        (
            "one\ntwo\n",
            {"insert_before_line": 2, "content": "1.5\n1.7"},
            "one\n1.5\n1.7\ntwo\n",
            "Inserted 2 line(s) before line 2",
        ),
        ("one\ntwo\n", {"insert_before_line": 1, "content": ""}, "\none\ntwo\n", "Inserted 1"),
        ("", {"insert_after_line": 0, "content": "first"}, "first\n", "Inserted 1 line(s)"),
        (
            "one\r\ntwo\r\n",
            {"insert_after_line": 1, "content": "mid"},
            "one\r\nmid\r\ntwo\r\n",
            "Inserted 1 line(s) after line 1",
        ),
        (
            "a\nb\nc\nd\n",
            {"delete_lines": {"start": 2, "end": 3}},
            "a\nd\n",
            "Deleted lines 2-3 (2 line(s))",
        ),
        ("a\nb\nc", {"delete_lines": {"start": 3, "end": 3}}, "a\nb", "Deleted lines 3-3"),
        ("a\r\nb\r\n", {"delete_lines": {"start": 1, "end": 1}}, "b\r\n", "Deleted lines 1-1"),
        ("a\nb\n", {"delete_lines": {"start": 1, "end": 2}}, "", "Deleted lines 1-2 (2 line(s))"),
    ],
)
def test_edit_file_line_operations(call, root, original, arguments, expected, message):
    write(root, "a.md", original.encode())
    text = ok(call("edit_file", path="a.md", **arguments))
    assert text.startswith(message) and text.endswith(' in "a.md".')
    assert (root / "a.md").read_bytes() == expected.encode()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"old_text": "one", "new_text": "1", "insert_after_line": 1},
            "Cannot mix text replacement",
        ),
        ({"old_text": "one", "new_text": "1", "content": "x"}, "Cannot mix text replacement"),
        ({}, "Must provide old_text and new_text, or one line operation"),
        ({"content": "x"}, "Must provide old_text and new_text"),
        (
            {"insert_after_line": 1, "delete_lines": {"start": 1, "end": 1}, "content": "x"},
            "Only one line operation",
        ),
        ({"old_text": "one"}, "new_text given"),
        ({"new_text": "x"}, "old_text must be non-empty"),
        ({"old_text": "", "new_text": "x"}, "old_text must be non-empty"),
        ({"insert_after_line": 1, "content": "x", "replace_all": True}, "replace_all only"),
        ({"insert_after_line": 1}, "content is required to insert lines"),
        ({"delete_lines": {"start": 1, "end": 1}, "content": "x"}, "not taken by delete_lines"),
        ({"insert_after_line": 3, "content": "x"}, "Line 3 does not exist in file with 2 lines."),
        ({"insert_after_line": -1, "content": "x"}, "Line -1 does not exist"),
        ({"insert_before_line": 0, "content": "x"}, "Line 0 does not exist"),
        ({"insert_before_line": 3, "content": "x"}, "Line 3 does not exist"),
        ({"delete_lines": {"start": 2, "end": 3}}, "Line 3 does not exist in file with 2 lines."),
        ({"delete_lines": {"start": 0, "end": 1}}, "Line 0 does not exist"),
        ({"delete_lines": {"start": 2, "end": 1}}, "delete_lines end (1) is before its start (2)"),
    ],
)
def test_edit_file_rules(call, root, arguments, message):
    write(root, "a.md", "one\ntwo\n")
    assert message in error(call("edit_file", path="a.md", **arguments))
    assert (root / "a.md").read_text() == "one\ntwo\n"


def test_edit_file_respects_the_size_limit(call, root):
    write(root, "a.md", "x" * 900)
    text = error(call("edit_file", path="a.md", old_text="x", new_text="yy", replace_all=True))
    assert "the limit is 1000 bytes" in text
    assert (root / "a.md").read_text() == "x" * 900


@pytest.mark.parametrize(("path", "setup"), [("notes.md", "Notes.md"), ("folder", "folder/x.md")])
def test_edit_file_needs_an_exact_existing_file(call, root, path, setup):
    write(root, setup, "x")
    assert f"File not found: {path} (edit_file needs the exact name)" in error(
        call("edit_file", path=path, old_text="x", new_text="y")
    )


# -- create_folder ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a/b", 'Created folder "a/b".'),
        ("a/b/", 'Created folder "a/b".'),
        ("./x", 'Created folder "x".'),
    ],
)
def test_create_folder(call, root, path, message):
    assert ok(call("create_folder", path=path)) == message
    assert (root / message.split('"')[1]).is_dir()


def test_create_folder_that_exists_is_not_an_error(call, root):
    (root / "a").mkdir()
    assert ok(call("create_folder", path="a/")) == 'Folder "a" already exists.'


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("file.md", "'file.md' is a file, not a folder"),
        ("file.md/sub", "cannot create the folders of 'file.md/sub': a file is in the way"),
        ("", "the path is empty"),
        ("/", "is absolute"),
    ],
)
def test_create_folder_errors(call, root, path, message):
    write(root, "file.md", "x")
    assert message in error(call("create_folder", path=path))


# -- delete_file ------------------------------------------------------------------------------


def test_delete_moves_to_the_trash_keeping_the_path(call, root):
    write(root, "notes/a.md", "first")
    assert ok(call("delete_file", path="notes/a.md")) == (
        "Deleted 'notes/a.md' to trash (now '.trash/notes/a.md')."
    )
    assert not (root / "notes/a.md").exists()
    assert (root / ".trash/notes/a.md").read_text() == "first"


def test_delete_adds_a_number_when_the_trash_has_that_name(call, root):
    for n, content in enumerate(["first", "second", "third"]):
        write(root, "notes/a.md", content)
        suffix = f"-{n}" if n else ""
        assert ok(call("delete_file", path="notes/a.md")).endswith(
            f"(now '.trash/notes/a{suffix}.md')."
        )
    assert [
        (root / f".trash/notes/{name}").read_text() for name in ("a.md", "a-1.md", "a-2.md")
    ] == [
        "first",
        "second",
        "third",
    ]


def test_delete_a_folder_with_its_content(call, root):
    write(root, "folder/sub/x.md", "x")
    assert ok(call("delete_file", path="folder/")) == (
        "Deleted 'folder' to trash (now '.trash/folder')."
    )
    assert (root / ".trash/folder/sub/x.md").read_text() == "x"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("gone.md", "File or folder not found: gone.md"),
        ("Notes/a.md", "File or folder not found: Notes/a.md"),
        (".", "is the workspace itself"),
        (".trash/notes", "Cannot change files in '.trash/' directory"),
    ],
)
def test_delete_errors(call, root, path, message):
    write(root, "notes/a.md", "x")
    write(root, ".trash/notes/old.md", "x")
    assert message in error(call("delete_file", path=path))
    assert (root / "notes/a.md").exists() and (root / ".trash/notes/old.md").exists()


def test_delete_refuses_a_trash_that_is_a_link(call, root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".trash").symlink_to(elsewhere)
    write(root, "a.md", "x")
    assert "'.trash' is a symbolic link; nothing was deleted" in error(
        call("delete_file", path="a.md")
    )
    assert (root / "a.md").exists() and list(elsewhere.iterdir()) == []


# -- move_file --------------------------------------------------------------------------------


def test_move_file_renames_and_creates_the_parent(call, root):
    write(root, "a.md", "a")
    assert ok(call("move_file", source="a.md", destination="new/place.md")) == (
        "Moved 'a.md' to 'new/place.md'."
    )
    assert (root / "new/place.md").read_text() == "a" and not (root / "a.md").exists()


def test_move_file_moves_folders(call, root):
    write(root, "dir/x.md", "x")
    assert ok(call("move_file", source="dir", destination="archive/dir")) == (
        "Moved 'dir' to 'archive/dir'."
    )
    assert (root / "archive/dir/x.md").read_text() == "x"


@pytest.mark.parametrize("destination", ["b.md", "./b.md", "b.md/", ".//b.md"])
def test_moving_onto_itself_does_nothing(call, root, destination):  # T4
    write(root, "b.md", "b")
    assert ok(call("move_file", source="b.md", destination=destination)) == (
        f"'b.md' and '{destination}' are the same path; nothing to do."
    )
    assert (root / "b.md").read_text() == "b"


@pytest.mark.parametrize(
    ("source", "destination", "message"),
    [
        ("a.md", "b.md", "Destination already exists: b.md (move_file never overwrites"),  # T4
        ("a.md", "dir", "Destination already exists: dir"),
        ("gone.md", "x.md", "File or folder not found: gone.md"),
        ("A.md", "x.md", "File or folder not found: A.md"),
        ("dir", "dir/sub", "cannot move 'dir' into itself"),
        ("a.md", "a.md/x.md", "cannot move 'a.md' into itself"),
        ("a.md", "b.md/x.md", "cannot create the folders of 'b.md/x.md'"),
        ("a.md", "", "the path is empty"),
    ],
)
def test_move_file_errors(call, root, source, destination, message):
    write(root, "a.md", "a")
    write(root, "b.md", "b")
    write(root, "dir/x.md", "x")
    assert message in error(call("move_file", source=source, destination=destination))
    assert (root / "a.md").read_text() == "a" and (root / "b.md").read_text() == "b"


def test_moving_or_deleting_a_link_leaves_its_target_alone(call, root):
    write(root, "notes/real.md", "content")
    (root / "notes/link.md").symlink_to(root / "notes/real.md")
    ok(call("move_file", source="notes/link.md", destination="shortcut.md"))
    assert (root / "shortcut.md").is_symlink()
    ok(call("delete_file", path="shortcut.md"))
    assert (root / ".trash/shortcut.md").is_symlink()
    assert (root / "notes/real.md").read_text() == "content"


# -- search_files -----------------------------------------------------------------------------


def test_search_files_output_merges_overlapping_context(call, root):
    write(root, "a.md", "alpha\nbeta\nmilk\ngamma\nmilk again\ndelta\nx\ny\nz\nmilk\n")
    assert ok(call("search_files", pattern="milk", context_lines=1)) == (
        "Found 1 matching file(s):\n\n## a.md\n"
        "Line 2:   beta\nLine 3: > milk\nLine 4:   gamma\nLine 5: > milk again\nLine 6:   delta\n"
        "...\n"
        "Line 9:   z\nLine 10: > milk"
    )


def test_search_files_is_case_sensitive_regex(call, root):
    write(root, "a.md", "Milk\nmilk\n")
    assert "> milk" in ok(call("search_files", pattern="^m", context_lines=0))
    assert "> Milk" not in ok(call("search_files", pattern="^m", context_lines=0))
    assert "> Milk" in ok(call("search_files", pattern="(?i)^m", context_lines=0))


def test_search_files_shows_at_most_five_excerpts_per_file(call, root):
    write(root, "many.md", "\n".join("hit" if n % 10 == 0 else "x" for n in range(100)))
    assert ok(call("search_files", pattern="hit", context_lines=0)).count("> hit") == 5


def test_search_files_reports_at_most_max_results_files(call, root):
    for n in range(5):
        write(root, f"f{n}.md", "hit")
    text = ok(call("search_files", pattern="hit", max_results=2))
    assert text.startswith("Found 2 matching file(s)") and text.count("## ") == 2


@pytest.mark.parametrize(
    ("file_pattern", "found"),
    [
        (None, ["Projects/plan.md", "notes.txt", "top.md"]),
        ("*.PY", ["code/tool.py"]),
        ("*.md", ["Projects/plan.md", "top.md"]),
        ("**/*.csv", ["data/deep/table.csv"]),
        ("projects/**", ["Projects/plan.md"]),
        ("t?p.md", ["top.md"]),
        ("*", ["Projects/plan.md", "code/tool.py", "data/deep/table.csv", "notes.txt", "top.md"]),
    ],
)
def test_search_files_file_patterns(call, root, file_pattern, found):
    for name in ["top.md", "notes.txt", "Projects/plan.md", "code/tool.py", "data/deep/table.csv"]:
        write(root, name, "needle\n")
    arguments = {"pattern": "needle"} | ({"file_pattern": file_pattern} if file_pattern else {})
    text = ok(call("search_files", **arguments))
    shown = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert sorted(shown) == sorted(found)


def test_search_files_skips_binary_protected_and_trashed_files(call, root):
    write(root, "binary.md", b"needle\x00\x01")
    write(root, "latin.md", "needle caf\xe9".encode("latin-1"))
    for name in [".git/n.md", ".obsidian/n.md", ".smarthole/n.md", "private/n.md", ".trash/n.md"]:
        write(root, name, "needle")
    write(root, "notes/.obsidian/ok.md", "needle")
    assert ok(call("search_files", pattern="needle")) == (
        "Found 1 matching file(s):\n\n## notes/.obsidian/ok.md\nLine 1: > needle"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"pattern": "("}, "Invalid regular expression '('"),
        ({"pattern": "x", "max_results": 0}, "max_results must be at least 1"),
    ],
)
def test_search_files_errors(call, arguments, message):
    assert message in error(call("search_files", **arguments))


def test_search_files_with_nothing_found(call, root):
    write(root, "a.md", "hay")
    assert ok(call("search_files", pattern="needle")) == "No files found matching the pattern."


# -- list_files -------------------------------------------------------------------------------


def test_list_files_newest_first_then_by_path(call, root):
    for seconds, name in [(1, "old.md"), (3, "new.md"), (2, "b.md"), (2, "a.md")]:
        set_mtime(write(root, name, name), 1_700_000_000 + seconds)
    (root / "Sub").mkdir()
    set_mtime(root / "Sub", 1_600_000_000)
    write(root, ".git/config", "x")
    lines = ok(call("list_files")).splitlines()
    assert lines[0] == "Found 5 item(s) matching '*' in '.':"
    assert [line.split(" ")[1] for line in lines[1:]] == [
        "new.md",
        "a.md",
        "b.md",
        "old.md",
        "Sub/",
    ]
    assert lines[1].startswith("[file] new.md (modified: 2023-11-1") and lines[5] == "[folder] Sub/"


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ({"pattern": "**/*.md", "path": "projects"}, ["Projects/a/x.md"]),
        ({"pattern": "*", "path": "Projects"}, ["Projects/a/", "Projects/b.txt"]),
        ({"pattern": "**"}, ["Projects/", "Projects/a/", "Projects/a/x.md", "Projects/b.txt"]),
        ({"pattern": "*.TXT", "path": "PROJECTS/"}, ["Projects/b.txt"]),
    ],
)
def test_list_files_patterns_are_relative_to_the_folder(call, root, arguments, shown):
    write(root, "Projects/a/x.md", "x")
    write(root, "Projects/b.txt", "x")
    lines = ok(call("list_files", **arguments)).splitlines()[1:]
    assert sorted(line.split(" ")[1] for line in lines) == sorted(shown)


@pytest.mark.parametrize(("asked", "shown"), [(5000, 1000), (1000, 1000), (3, 3)])
def test_list_files_caps_max_results_at_1000(call, root, asked, shown):  # T5
    for n in range(1001):
        (root / f"f{n:04}.md").touch()
    lines = ok(call("list_files", max_results=asked)).splitlines()
    assert lines[0] == f"Found 1001 item(s) matching '*' in '.' (showing the {shown} newest):"
    assert len(lines) == shown + 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"max_results": 0}, "max_results must be at least 1"),  # T5
        ({"max_results": -3}, "max_results must be at least 1"),
        ({"path": "nowhere"}, "Folder not found: 'nowhere' was not found"),
        ({"path": "a.md"}, "Folder not found: 'a.md' is a file, not a folder"),
        ({"path": ".git"}, "Cannot access files in '.git/' directory"),
    ],
)
def test_list_files_errors(call, root, arguments, message):
    write(root, "a.md", "x")
    assert message in error(call("list_files", **arguments))


def test_list_files_with_nothing_matching(call, root):
    write(root, "a.md", "x")
    assert ok(call("list_files", pattern="*.pdf")) == "No files match '*.pdf' in '.'."


def test_the_trash_can_be_listed_and_read_but_is_hidden_elsewhere(call, root):
    write(root, "notes/a.md", "x")
    ok(call("delete_file", path="notes/a.md"))
    assert ".trash" not in ok(call("list_files", pattern="**"))
    assert "[file] .trash/notes/a.md" in ok(call("list_files", pattern="**", path=".trash"))
    assert ok(call("read_file", path=".trash/notes/a.md")) == "1: x"


# -- get_file_info ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "shown"),
    [(0, "0 bytes"), (10, "10 bytes"), (2048, "2.0 KB"), (3 * 1024 * 1024, "3.0 MB")],
)
def test_get_file_info_of_a_file(call, root, size, shown):
    write(root, "a.md", b"x" * size)
    lines = ok(call("get_file_info", path="A.MD")).splitlines()
    assert lines[:2] == ["File: a.md", f"Size: {shown} ({size} bytes)"]
    assert lines[2].startswith("Created: ") and lines[3].startswith("Modified: ")
    assert len(lines) == 4


def test_get_file_info_of_a_folder(call, root):
    write(root, "folder/one.md", "1")
    lines = ok(call("get_file_info", path="folder")).splitlines()
    assert lines[0] == "Folder: folder/"
    assert lines[1].startswith("Created: ") and lines[2].startswith("Modified: ")


def test_get_file_info_of_nothing(call):
    assert "Path not found: nope" in error(call("get_file_info", path="nope"))
