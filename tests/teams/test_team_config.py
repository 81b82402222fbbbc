"""[agents.<name>] and [teams]: every mistake is a ConfigError at start that names its key."""

from __future__ import annotations

import pytest

from smarthole.cli import main
from smarthole.config import parse_config
from smarthole.errors import ConfigError
from tests.helpers import write_config


@pytest.mark.parametrize(
    ("agents", "problem"),
    [
        (
            {"researcher": {"description": "d", "colour": "red"}},
            "[agents.researcher] unknown key 'colour'",
        ),
        ({"researcher": {"instructions": "x"}}, "[agents.researcher] description is required"),
        ({"Researcher": {"description": "d"}}, "[agents.Researcher] the name must be a lowercase"),
        ({"r" * 33: {"description": "d"}}, "the name must be a lowercase letter"),
        ({"assistant": {"description": "d"}}, "[agents.assistant] has the entry agent's name"),
        ({"researcher": "nope"}, "[agents] researcher must be a table"),
        (
            {"researcher": {"description": "d", "instructions": "a", "instructions_file": "b"}},
            "[agents.researcher] give instructions or instructions_file, not both",
        ),
        (
            {"researcher": {"description": "d", "tools": ["send_message"]}},
            "[agents.researcher] tools: 'send_message' is for the entry agent only",
        ),
        ({"researcher": {"description": "d", "tools": "read_file"}}, "tools must be a list"),
    ],
)
def test_each_bad_agent_table_is_named(agents, problem):
    with pytest.raises(ConfigError) as raised:
        parse_config({"agents": agents})
    assert problem in str(raised.value)


def test_the_teams_limits_are_checked():
    with pytest.raises(ConfigError, match=r"\[teams\] max_turns must be at least 1"):
        parse_config({"teams": {"max_turns": 0}})
    with pytest.raises(ConfigError, match=r"\[teams\] unknown key 'turns'"):
        parse_config({"teams": {"turns": 3}})


def test_a_renamed_entry_agent_frees_its_old_name():
    config = parse_config(
        {"agent": {"name": "boss"}, "agents": {"assistant": {"description": "helps"}}}
    )
    assert config.agent.name == "boss" and list(config.agents) == ["assistant"]


@pytest.mark.parametrize(
    ("agent", "problem"),
    [
        (
            {"description": "d", "tools": ["read_file", "no_such_tool"]},
            "[agents.researcher] tools: no plugin registers a tool named 'no_such_tool'",
        ),
        (
            {"description": "d", "instructions_file": "agents/missing.md"},
            "[agents.researcher] instructions_file",
        ),
        # The team tools are a built-in plugin's; a team agent is still refused them.
        (
            {"description": "d", "tools": ["read_file", "start_task"]},
            "[agents.researcher] tools: 'start_task' is for the entry agent only",
        ),
        (
            {"description": "d", "tools": ["finish_task"]},
            "[agents.researcher] tools: 'finish_task' is every team agent's; leave it out",
        ),
    ],
)
def test_what_needs_the_plugins_or_the_disk_is_checked_at_start(
    home, env, monkeypatch, capsys, agent, problem
):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    write_config(home, agents={"researcher": agent})
    assert main(["run", "--home", str(home), "--once"]) == 2
    err = capsys.readouterr().err
    assert problem in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("tools", "servers", "hint"),
    [
        (["raed_file"], (), "(did you mean 'read_file'? a team agent may use read_file, shout)"),
        (["zzz"], (), "(a team agent may use read_file, shout)"),
        (
            ["file__read"],
            ("files", "tracker"),
            "(did you mean 'files__read'? a team agent may use read_file, shout, "
            "or <server>__<tool> of the MCP servers files, tracker)",
        ),
    ],
)
def test_an_unknown_tool_lists_the_tools_there_are(tmp_path, tools, servers, hint):
    from smarthole.config.teams import TeamAgentSettings, resolve_team
    from smarthole.home import Home

    with pytest.raises(ConfigError) as raised:
        resolve_team(
            {"r": TeamAgentSettings(description="d", tools=tools)},
            home=Home(tmp_path),
            default_model="m",
            tool_names={"read_file", "shout", "send_message", "end_conversation"},
            mcp_servers=servers,
        )
    assert str(raised.value).endswith(hint)


def test_an_unknown_tool_at_start_lists_what_the_plugins_registered(home, env, monkeypatch, capsys):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    write_config(home, agents={"researcher": {"description": "d", "tools": ["raed_file"]}})
    assert main(["run", "--home", str(home), "--once"]) == 2
    err = capsys.readouterr().err
    assert "tools: no plugin registers a tool named 'raed_file' (did you mean 'read_file'?" in err
    offered = err.split("a team agent may use ")[1]
    assert "read_file" in offered and "search_files" in offered and "send_message" not in offered


def test_a_reload_reads_the_agents_and_their_instruction_files_again(home):
    from smarthole.app import App
    from smarthole.daemon.reload import reload_config
    from smarthole.home import Home

    (home / "agents").mkdir()
    (home / "agents" / "r.md").write_text("Version one.")
    write_config(home, agents={"r": {"description": "d", "instructions_file": "agents/r.md"}})
    app = App.load(Home(home))
    try:
        assert app.team["r"].instructions == "Version one."
        (home / "agents" / "r.md").write_text("Version two.")
        assert reload_config(app)
        assert app.team["r"].instructions == "Version two."
        (home / "agents" / "r.md").unlink()
        assert not reload_config(app)  # a missing file: the running team is kept
        assert app.team["r"].instructions == "Version two."
    finally:
        app.close()
