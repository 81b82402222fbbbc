"""The memory tool against the fake API: what the model writes is kept in the store, with the
message it came from, and the profile reaches the next conversation's system prompt."""

from __future__ import annotations

import json

import pytest

from smarthole.agent.memorytext import PROFILE
from smarthole.db.memory import WriteSource
from smarthole.testing import memory_call, text, tool_use
from tests.helpers import db, drop, run_once, write_config

SPEC = {"type": "memory_20250818", "name": "memory"}


def memory_rows(home):
    with db(home) as connection:
        return {r["path"]: r["text"] for r in connection.execute("SELECT * FROM memory_files")}


def test_a_fact_said_in_one_conversation_is_in_the_next_ones_system_prompt(home, fake, env):
    fake.add(memory_call("create", path=PROFILE, file_text="Name: Ana (she said so)\nLikes tea"))
    fake.add(text("Noted, Ana."))
    drop(home, "I'm Ana and I love tea", "m1")
    run_once(home, env)
    first, second = fake.requests
    assert SPEC in first.body["tools"]
    assert first.headers["anthropic-beta"] == "context-management-2025-06-27"
    (result,) = second.tool_results
    assert result["content"] == f"File created successfully at: {PROFILE}"
    assert not result["is_error"]
    assert memory_rows(home) == {PROFILE: "Name: Ana (she said so)\nLikes tea"}

    fake.add(text("Hello again, Ana."))
    drop(home, "Hi", "m2", new_conversation=True)
    run_once(home, env)  # a restart: a new daemon
    later = fake.requests[-1]
    assert "<profile>\nName: Ana (she said so)\nLikes tea\n</profile>" in later.system_text
    assert "## Memory" in later.system_text


def test_each_write_records_the_message_it_came_from(home, fake, env):
    fake.add(memory_call("create", path="/memories/notes/tea.md", file_text="green\n"))
    fake.add(
        memory_call("insert", path="/memories/notes/tea.md", insert_line=1, insert_text="oolong")
    )
    fake.add(text("Noted."))
    drop(home, "I like green tea, and oolong", "m1")
    run_once(home, env)
    with db(home) as connection:
        writes = connection.execute("SELECT * FROM memory_writes ORDER BY id").fetchall()
        (row,) = connection.execute("SELECT * FROM memory_files").fetchall()
        events = connection.execute(
            "SELECT type, message_id, data FROM events WHERE type LIKE 'memory_%'"
        ).fetchall()
    assert [(w["operation"], w["by"], json.loads(w["sources"])) for w in writes] == [
        ("create", "agent", ["m1"]),
        ("insert", "agent", ["m1"]),
    ]
    assert row["text"] == "green\noolong\n"
    first, second = writes[0]["id"], writes[1]["id"]
    # Per line, the writes it came from (the empty line after the last newline holds nothing).
    assert json.loads(row["lines"]) == [[first], [second], []]
    assert [(e["type"], e["message_id"]) for e in events] == [("memory_written", "m1")] * 2
    data = json.loads(events[0]["data"])
    assert data == {
        "path": "/memories/notes/tea.md",
        "operation": "create",
        "by": "agent",
        "agent": "assistant",
        "sources": ["m1"],
    }


def test_the_profile_stays_as_the_conversation_began_while_the_tool_sees_changes(home, fake, env):
    fake.add(memory_call("create", path=PROFILE, file_text="Likes tea"))
    fake.add(text("Noted."))
    drop(home, "I like tea", "m1")
    run_once(home, env)
    fake.add(text("Hello."))
    drop(home, "Hi", "m2", new_conversation=True)
    run_once(home, env)
    fake.add(memory_call("str_replace", path=PROFILE, old_str="tea", new_str="coffee"))
    fake.add(memory_call("view", path=PROFILE))
    fake.add(text("Changed."))
    drop(home, "Actually, coffee", "m3")
    run_once(home, env)
    fake.add(text("Sure."))
    drop(home, "Thanks", "m4")
    run_once(home, env)
    hello, _, view, _, thanks = fake.requests[2:]
    assert "<profile>\nLikes tea\n</profile>" in hello.system_text
    assert thanks.body["system"] == hello.body["system"], "the same bytes all conversation"
    assert view.tool_results[0]["content"].startswith("The memory file has been edited.")
    assert "coffee" in fake.requests[5].tool_results[0]["content"]
    fake.add(text("Hi."))
    drop(home, "Morning", "m5", new_conversation=True)
    run_once(home, env)
    assert "<profile>\nLikes coffee\n</profile>" in fake.requests[-1].system_text


def test_memory_off_offers_no_tool_and_no_profile(home, fake, env):
    write_config(home, memory={"enabled": False})
    fake.add(text("Hi."))
    drop(home, "Hi", "m1")
    run_once(home, env)
    (request,) = fake.requests
    assert "memory" not in request.tools
    assert "## Memory" not in request.system_text
    assert "anthropic-beta" not in request.headers


# -- the commands, through the same Memory the tool uses ------------------------------------


@pytest.fixture
def memory(home, runtimes):
    return runtimes(home).memory


@pytest.fixture
def call(memory):
    source = WriteSource(agent="assistant", sources=("m1",))
    where = {"conversation": None, "channel": None, "turn": None, "message_id": "m1"}

    def run(**arguments):
        with memory.tables.store.transaction() as connection:
            result = memory.answer(connection, arguments, source, where)
        return ("error: " if result.is_error else "") + result.text

    return run


def test_every_command_answers_as_the_sdks_filesystem_memory_does(call):
    assert call(command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n0B\t/memories"
    )
    assert call(command="create", path="/memories/a.md", file_text="one\ntwo\n") == (
        "File created successfully at: /memories/a.md"
    )
    assert call(command="view", path="/memories/a.md") == (
        "Here's the content of /memories/a.md with line numbers:\n"
        "     1\tone\n     2\ttwo\n     3\t"
    )
    assert call(command="view", path="/memories/a.md", view_range=[2, -1]) == (
        "Here's the content of /memories/a.md with line numbers:\n     2\ttwo\n     3\t"
    )
    assert call(command="str_replace", path="/memories/a.md", old_str="two", new_str="2") == (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     1\tone\n     2\t2\n     3\t"
    )
    assert call(command="insert", path="/memories/a.md", insert_line=0, insert_text="zero") == (
        "The file /memories/a.md has been edited."
    )
    assert call(command="rename", old_path="/memories/a.md", new_path="/memories/b/c.md") == (
        "Successfully renamed /memories/a.md to /memories/b/c.md"
    )
    assert call(command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n11B\t/memories\n11B\t/memories/b/\n11B\t/memories/b/c.md"
    )
    assert call(command="delete", path="/memories/b") == "Successfully deleted /memories/b"
    assert call(command="view", path="/memories/b/c.md").startswith("error: ")


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"command": "view", "path": "/etc/passwd"}, "Path must start with /memories"),
        ({"command": "view", "path": "/memoriesx"}, "Path must start with /memories"),
        ({"command": "create", "path": "/memories/../x", "file_text": ""}, "would escape"),
        ({"command": "create", "path": "/memories/./x", "file_text": ""}, "would escape"),
        ({"command": "create", "path": "/memories//x", "file_text": ""}, "would escape"),
        ({"command": "create", "path": "/memories/a\x1bb", "file_text": ""}, "control character"),
        ({"command": "create", "path": "/memories/" + "a" * 250, "file_text": ""}, "255 bytes"),
        ({"command": "create", "path": "/memories", "file_text": ""}, "directory itself"),
        ({"command": "delete", "path": "/memories"}, "directory itself"),
        ({"command": "delete", "path": "/memories/none"}, "does not exist"),
        (
            {"command": "str_replace", "path": "/memories/no", "old_str": "a", "new_str": "b"},
            "does not exist",
        ),
        (
            {"command": "insert", "path": "/memories/no", "insert_line": 0, "insert_text": "a"},
            "does not exist",
        ),
        ({"command": "create", "path": "/memories/a.md"}, "file_text must be a string"),
        ({"command": "format", "path": "/memories"}, "Unknown command 'format'"),
        ({"path": "/memories"}, "Unknown command None"),
    ],
)
def test_a_bad_path_or_command_is_an_error_the_model_reads(call, arguments, error):
    answer = call(**arguments)
    assert answer.startswith("error: Error: ") and error in answer


def test_str_replace_and_insert_refuse_what_they_cannot_place(call):
    call(command="create", path="/memories/a.md", file_text="x\nx\n")
    assert "did not appear verbatim" in call(
        command="str_replace", path="/memories/a.md", old_str="y", new_str="z"
    )
    assert "Multiple occurrences of old_str `x` in lines: 1, 2" in call(
        command="str_replace", path="/memories/a.md", old_str="x", new_str="z"
    )
    assert "It should be within the range [0, 2]." in call(
        command="insert", path="/memories/a.md", insert_line=5, insert_text="z"
    )
    assert "already exists" in call(
        command="rename", old_path="/memories/a.md", new_path="/memories/a.md"
    )


def test_a_file_or_a_memory_too_large_is_refused_and_nothing_is_written(home, runtimes):
    write_config(home, memory={"max_file_bytes": 10, "max_bytes": 15})
    memory = runtimes(home).memory
    source, where = WriteSource(sources=("m1",)), {"message_id": "m1"}

    def run(**arguments):
        with memory.tables.store.transaction() as connection:
            return memory.answer(connection, arguments, source, where)

    too_big = run(command="create", path="/memories/a.md", file_text="x" * 11)
    assert too_big.is_error and "at most 10 ([memory] max_file_bytes)" in too_big.text
    assert not run(command="create", path="/memories/a.md", file_text="x" * 10).is_error
    full = run(command="create", path="/memories/b.md", file_text="y" * 6)
    assert full.is_error and "([memory] max_bytes)" in full.text
    assert [f.path for f in memory.tables.files()] == ["/memories/a.md"]
    assert len(memory.tables.writes(path="/memories/a.md")) == 1


def test_the_fake_refuses_the_memory_tool_without_its_beta_header(fake):
    import anthropic

    client = anthropic.Anthropic(api_key="test", base_url=fake.url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="context-management-2025-06-27"):
        client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}], tools=[SPEC]
        )
    client.close()


# -- team agents: the tool only with ``memory = true`` ------------------------------------

TEAM = {
    "keeper": {"description": "Keeps notes", "instructions": "Keep notes.", "memory": True},
    "reader": {"description": "Reads", "instructions": "Read.", "tools": ["read_file"]},
}


def test_a_team_agent_gets_the_memory_tool_only_with_memory_true(home, fake, env):
    write_config(home, agents=TEAM)
    fake.add(
        tool_use("start_task", {"task": "note tea", "agents": ["keeper", "reader"]}),
        entry_agent=True,
    )
    fake.add(memory_call("create", path="/memories/team.md", file_text="tea"), agent="keeper")
    fake.add(text("Noted."), agent="keeper")
    fake.add(tool_use("finish_task", {"result": "noted"}), agent="reader")
    fake.add(text("Done."), agent="reader")
    fake.add(text("The team noted it."), entry_agent=True)
    drop(home, "Have the team note that I like tea", "m1")
    run_once(home, env)
    keeper = next(r for r in fake.requests if r.agent == "keeper")
    reader = next(r for r in fake.requests if r.agent == "reader")
    assert SPEC in keeper.body["tools"]
    assert keeper.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert "memory" not in reader.tools
    with db(home) as connection:
        (write,) = connection.execute("SELECT * FROM memory_writes").fetchall()
    assert (write["by"], write["agent"], json.loads(write["sources"])) == (
        "agent",
        "keeper",
        ["m1"],
    ), "a team agent's write comes from its turn's human message"
    assert memory_rows(home) == {"/memories/team.md": "tea"}


def test_the_memory_tool_is_not_named_in_a_team_agents_tools(home):
    from smarthole.config import parse_config
    from smarthole.errors import ConfigError

    with pytest.raises(ConfigError, match="the memory tool is given by memory = true"):
        parse_config({"agents": {"a": {"description": "d", "tools": ["memory"]}}})
