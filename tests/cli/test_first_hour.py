"""What a new user trips over in the first hour (issue 33): `status` on what waits and what is
broken, `reload` on what it could not apply, `ls` and `resume` on which conversation is current,
`events` and `show` for people, and `import` keeping an export's channel."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.testing import error, text
from tests.helpers import db, drop, finals, in_process, run_once, wait_for, write_config
from tests.teams.test_tasks import TEAM, start_task


def cli(home: Path, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


def status_json(home: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    cli(home, "status", "--json")
    return json.loads(capsys.readouterr().out)


def conversation_of(home: Path, message_id: str) -> str:
    query = (
        "SELECT c.id FROM turn_rows t JOIN conversations c ON c.key = t.conversation "
        "WHERE t.message_id = ?"
    )
    (row,) = db(home).execute(query, (message_id,))
    return str(row["id"])


# -- status -----------------------------------------------------------------------------------


def test_status_counts_the_files_no_daemon_has_claimed(home, capsys):
    for number in range(3):
        drop(home, "hello", f"m{number}")
    (home / "inbox" / ".hidden.md").write_text("not a message")
    (home / "inbox" / "half-written.md.tmp").write_text("not yet")
    (home / "inbox" / "a-folder").mkdir()
    assert status_json(home, capsys)["inbox_waiting"] == 3
    assert cli(home, "status") == 3  # no daemon
    lines = capsys.readouterr().out.splitlines()
    assert "inbox: 3 files waiting to be claimed (no daemon is running)" in lines


def test_status_warns_when_config_toml_no_longer_loads_with_runs_reason(home, environ, capsys):
    write_config(home, model={"max_tokns": 100})
    assert cli(home, "run", "--once") == 2
    reason = capsys.readouterr().err.strip().removeprefix("smarthole: ")
    assert "max_tokns" in reason
    assert status_json(home, capsys)["config_error"] == reason
    cli(home, "status")
    warning = f"warning: config.toml does not load, so the next start would fail: {reason}"
    assert warning in capsys.readouterr().out.splitlines()
    assert cli(home, "status", "--check") == 1
    assert warning.removeprefix("warning: ") in capsys.readouterr().out.splitlines()


def test_a_config_that_loads_gives_no_warning(home, capsys):
    assert status_json(home, capsys)["config_error"] is None
    cli(home, "status")
    assert "warning:" not in capsys.readouterr().out


# -- reload -----------------------------------------------------------------------------------


def test_reload_names_what_needs_a_restart_and_status_keeps_saying_so(home, env, threads, capsys):
    daemon = threads(home, env)
    write_config(home, daemon={"workers": 2})
    assert cli(home, "reload") == 0
    first = capsys.readouterr().out
    assert first.splitlines()[1:] == ["needs a restart: [daemon] workers"]
    assert cli(home, "reload") == 0
    again = capsys.readouterr().out
    assert again.startswith("Reloaded ") and "needs a restart" not in again
    assert cli(home, "status") == 0
    status = capsys.readouterr().out.splitlines()
    assert "warning: the daemon needs a restart to apply: [daemon] workers" in status
    assert status_json(home, capsys)["restart_needed"] == ["[daemon] workers"]
    assert daemon.stop() == 0


# -- plugins, agents, mcp list: the running daemon's, beside the disk ------------------------

PLUGIN = '''
from smarthole import hookimpl


def {name}(text: str) -> str:
    """Say it back.

    :param text: What to say.
    """
    return text


@hookimpl
def register_tools(register):
    register({name})
'''


def listed(home: Path, capsys: pytest.CaptureFixture[str], *command: str) -> dict[str, dict]:
    code = main([*command, "--json", "--home", str(home)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {entry["name"]: entry for entry in json.loads(out)}


def said(home: Path, capsys: pytest.CaptureFixture[str], *command: str) -> str:
    """What ``smarthole COMMAND --home HOME`` printed (it must succeed)."""
    code = main([*command, "--home", str(home)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def marks(entry: dict) -> tuple[bool, bool, bool]:
    return entry["loaded"], entry["on_disk"], entry["changed"]


def test_plugins_shows_what_the_daemon_loaded_and_marks_the_disk(home, env, threads, capsys):
    folder = home / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "echo.py").write_text(PLUGIN.format(name="echo"))
    write_config(home, plugins={"paths": ["plugins"]})
    daemon = threads(home, env)
    (folder / "echo.py").unlink()
    (folder / "parrot.py").write_text(PLUGIN.format(name="parrot"))
    plugins = listed(home, capsys, "plugins")
    assert marks(plugins["echo"]) == (True, False, False)
    assert marks(plugins["parrot"]) == (False, True, False)
    assert marks(plugins["workspace"]) == (True, True, False)
    out = said(home, capsys, "plugins")
    assert out.startswith("As loaded by the running daemon:\n")
    lines = out.splitlines()
    echo = next(line for line in lines if line.startswith("echo  (folder: "))
    assert echo.endswith("  (loaded by the running daemon, no longer on disk)")
    parrot = next(line for line in lines if line.startswith("parrot  (folder: "))
    assert parrot.endswith("  (on disk, not loaded by the running daemon)")
    assert "`smarthole reload` applies what it can" in out
    assert said(home, capsys, "reload").startswith("Reloaded ")
    assert marks(listed(home, capsys, "plugins")["parrot"]) == (True, True, False)
    assert daemon.stop() == 0


def test_agents_shows_what_the_daemon_loaded_and_marks_config_toml(home, env, threads, capsys):
    write_config(home, agents=TEAM)
    daemon = threads(home, env)
    editor = {"description": "Edits the text", "instructions": "Edit."}
    researcher = {**TEAM["researcher"], "description": "Finds facts on the web"}
    write_config(home, agents={"researcher": researcher, "editor": editor})
    agents = listed(home, capsys, "agents")
    assert marks(agents["critic"]) == (True, False, False)
    assert marks(agents["editor"]) == (False, True, False)
    assert marks(agents["researcher"]) == (True, True, True)
    assert agents["researcher"]["description"] == "Finds facts in the notes"  # the daemon's
    out = said(home, capsys, "agents").splitlines()
    assert (
        "critic: Checks the facts  (loaded by the running daemon, no longer in config.toml)"
    ) in out
    assert "editor: Edits the text  (in config.toml, not loaded by the running daemon)" in out
    assert (
        "researcher: Finds facts in the notes  "
        "(changed in config.toml since the running daemon loaded it)"
    ) in out
    assert ("  description in config.toml [agents.researcher]: now 'Finds facts on the web'") in out
    assert said(home, capsys, "reload").startswith("Reloaded ")
    agents = listed(home, capsys, "agents")
    assert sorted(agents) == ["assistant", "editor", "researcher"]
    assert all(marks(agent) == (True, True, False) for agent in agents.values())
    assert daemon.stop() == 0


def test_agents_names_a_new_plugins_tools_as_not_loaded(home, env, threads, capsys):
    """A new plugin file is not a change of config.toml: the entry agent's line says its
    tools changed in plugins, and names each new tool, its plugin and its file."""
    folder = home / "plugins"
    folder.mkdir(exist_ok=True)
    write_config(home, plugins={"paths": ["plugins"]})
    daemon = threads(home, env)
    (folder / "parrot.py").write_text(PLUGIN.format(name="parrot"))
    (assistant,) = [a for a in listed(home, capsys, "agents").values() if a["role"] == "entry"]
    assert "parrot" not in assistant["tools"]  # the daemon's list
    (differs,) = assistant["differs"]
    assert differs == {
        "what": "tool",
        "name": "parrot",
        "loaded": False,
        "on_disk": True,
        "from": f"plugin parrot (folder: {folder / 'parrot.py'})",
    }
    out = said(home, capsys, "agents").splitlines()
    (entry,) = [line for line in out if "(entry agent)" in line]
    assert entry.endswith("  (changed in plugins since the running daemon loaded it)")
    assert "config.toml" not in entry
    assert (
        f"  tool parrot, from plugin parrot (folder: {folder / 'parrot.py'}): "
        "not loaded by the daemon"
    ) in out
    assert daemon.stop() == 0


def sleeper(**settings: object) -> dict[str, object]:
    """A stdio MCP server that never answers (nothing here may start it)."""
    return {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"], **settings}


def test_mcp_list_shows_the_daemons_servers_and_marks_config_toml(home, env, threads, capsys):
    write_config(home, mcp={"servers": {"old": sleeper(enabled=False)}})
    daemon = threads(home, env)
    write_config(home, mcp={"servers": {"new": sleeper(start_timeout_seconds=1)}})
    servers = listed(home, capsys, "mcp", "list")
    assert marks(servers["old"]) == (True, False, False)
    assert marks(servers["new"]) == (False, True, False)
    assert servers["new"]["state"] == "not started"  # listed, not started by the command
    out = said(home, capsys, "mcp", "list").splitlines()
    assert any(
        line.startswith("new  stdio: ")
        and line.endswith("  (in config.toml, not started by the running daemon)")
        for line in out
    ), out
    assert any(
        line.endswith("  (started by the running daemon, no longer in config.toml)") for line in out
    ), out
    assert daemon.stop() == 0


# -- which conversation is current ----------------------------------------------------------


def test_ls_marks_the_current_conversation_and_the_replaced_one_as_paused(home, fake, env, capsys):
    fake.default = text("ok")
    drop(home, "first", "m1", channel="kitchen")
    run_once(home, env)
    older = conversation_of(home, "m1")
    drop(home, "something else", "m2", channel="kitchen", new_conversation=True)
    run_once(home, env)
    replaced = conversation_of(home, "m2")
    drop(home, "back to the first", "m3", channel="kitchen", conversation=older)  # resumed
    run_once(home, env)
    cli(home, "ls", "--json")
    views = {view["id"]: view for view in json.loads(capsys.readouterr().out)}
    assert (views[older]["status"], views[older]["current"]) == ("active", True)
    assert (views[replaced]["status"], views[replaced]["current"]) == ("paused", False)
    cli(home, "ls")
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if "current" in line] == [
        next(line for line in lines if older in line)
    ]
    assert " · paused · " in next(line for line in lines if replaced in line)
    drop(home, "and a new message", "m4", channel="kitchen")
    run_once(home, env)
    assert conversation_of(home, "m4") == older  # where the daemon put it: the current one


def test_resume_shows_the_last_exchange_before_the_prompt(home, fake, environ, capsys):
    fake.add(text("Milk is on the list."))
    drop(home, "Add milk to the list", "m1")
    run_once(home, environ)
    conversation = conversation_of(home, "m1")
    done = in_process(capsys, "resume", conversation, "--home", str(home), input="")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("Last exchange:")
    assert lines[start - 1].startswith("Resuming ")
    assert lines[start + 1 : start + 3] == [
        "   you: Add milk to the list",
        "   agent: Milk is on the list.",
    ]


# -- events and show, for people --------------------------------------------------------------

TIMES = "\N{MULTIPLICATION SIGN}"
USAGE = {
    "input_tokens": 150,
    "output_tokens": 75,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}


def test_events_reads_as_text_for_people(home, fake, env, capsys):
    write_config(home, agents=TEAM)
    fake.add(start_task(max_turns=2), entry_agent=True)
    fake.add(text("Paris, says the atlas."), agent="researcher")
    fake.add(text("Confirmed."), agent="critic")
    fake.add(text("It is Paris.", usage=USAGE), entry_agent=True)
    drop(home, "Capital of France? Ask the team.", "m1")
    run_once(home, env)
    assert cli(home, "events") == 0
    out = capsys.readouterr().out
    assert "usage=in 150 · out 75 · cached 0" in out
    assert "agents=researcher, critic" in out
    assert "waiting_for_reply=no" in out
    assert not re.search(r"\{'|'\}|\[|=True|=False", out), out
    stored = [line for line in out.splitlines() if " message_stored " in line]
    assert any(line.endswith('"Capital of France? Ask the team."') for line in stored)
    assert any(line.endswith('"It is Paris."') for line in stored)
    finished = [line for line in out.splitlines() if " agent_turn_finished " in line]
    assert finished[0].endswith('"Paris, says the atlas."')
    assert cli(home, "events", "--json") == 0
    usages = [
        event["usage"]
        for event in map(json.loads, capsys.readouterr().out.splitlines())
        if "usage" in event
    ]
    assert USAGE in [{key: usage[key] for key in USAGE} for usage in usages]  # as stored


@pytest.fixture
def gives_up_soon(home: Path) -> Path:
    """A home whose daemon gives a message up after three quick attempts."""
    write_config(home, retry={"max_attempts": 3, "base_delay_seconds": 0.01})
    return home


def test_show_folds_one_error_repeated(gives_up_soon, fake, env, live_daemon, capsys):
    home = gives_up_soon
    for _ in range(3):
        fake.add(error(500, "api_error", "the server broke"))
    drop(home, "hello", "m1")
    wait_for(lambda: finals(home), 30, "the error reply")
    conversation = conversation_of(home, "m1")
    assert cli(home, "show", conversation) == 0
    lines = capsys.readouterr().out.splitlines()
    said = [line for line in lines if re.match(rf"   error( {TIMES}\d+)?: ", line)]
    assert len(said) == 1 and said[0].startswith(f"   error {TIMES}3: "), lines


# -- import -----------------------------------------------------------------------------------


def imported_channel(home: Path, tmp_path: Path, capsys, channel: object, *flag: str) -> str:
    """Import an export whose ``channel`` is ``channel`` (None: it has none); its channel."""
    export: dict[str, object] = {
        "conversation_id": "x",
        "title": "Old talk",
        "entry_agent": "assistant",
        "turns": [
            {"turn": 1, "role": "human", "content": "hi"},
            {"turn": 1, "role": "entry_agent", "content": "hello"},
        ],
    }
    if channel is not None:
        export["channel"] = channel
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export))
    assert cli(home, "import", str(path), *flag) == 0
    imported = capsys.readouterr().out.strip()
    (row,) = db(home).execute("SELECT channel FROM conversations WHERE id = ?", (imported,))
    return str(row["channel"])


def test_import_keeps_the_exports_channel_unless_told_otherwise(home, tmp_path, capsys):
    assert imported_channel(home, tmp_path, capsys, "kitchen") == "kitchen"
    assert imported_channel(home, tmp_path, capsys, "kitchen", "--channel", "garden") == "garden"
    for unusable in ("no spaces allowed", "x" * 65, ["kitchen"], None):
        assert imported_channel(home, tmp_path, capsys, unusable) == "default", unusable


def test_import_refuses_a_bad_channel_flag(home, tmp_path, capsys):
    path = tmp_path / "export.json"
    path.write_text(json.dumps({"turns": [{"role": "human", "content": "hi"}]}))
    assert cli(home, "import", str(path), "--channel", "two words") == 2
    assert "--channel 'two words' must be 1-64 letters" in capsys.readouterr().err
