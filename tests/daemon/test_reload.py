"""Reloading config.toml: SIGHUP and `smarthole reload`, without dropping in-flight turns."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading

import pytest

from smarthole import hookimpl
from smarthole.app import App
from smarthole.cli import main
from smarthole.config import Config, parse_config
from smarthole.daemon.reload import keep_restart_only
from smarthole.errors import ConfigError
from smarthole.home import Home
from smarthole.testing import hold, text
from tests.helpers import drop, finals, read_outbox, smarthole, wait_for, write_config


def test_restart_only_settings_keep_their_running_value_and_are_named():
    old = Config()
    new = parse_config(
        {
            "daemon": {"workers": 8, "shutdown_grace_seconds": 3},
            "agent": {"persona": "You are Beta."},
            "model": {"name": "claude-other"},
        }
    )
    applied, restart = keep_restart_only(old, new)
    assert restart == ["[daemon] workers", "[model] name"]
    assert applied.daemon.workers == 4 and applied.model.name == old.model.name
    assert applied.daemon.shutdown_grace_seconds == 3  # applies at once
    assert applied.agent.persona == "You are Beta."


def test_an_unchanged_config_needs_no_restart():
    assert keep_restart_only(Config(), Config()) == (Config(), [])


@dataclasses.dataclass(frozen=True)
class GreeterSettings:
    greeting: str = "hello"


class Greeter:
    @hookimpl
    def register_settings(self, register):
        register("greeter", GreeterSettings)


def test_reconfigure_rereads_plugin_settings_and_refuses_bad_ones(tmp_path):
    home = Home(tmp_path)
    app = App.load(home, Config(), extra_plugins=[("greeter", Greeter())])
    try:
        app.reconfigure(parse_config({"plugins": {"greeter": {"greeting": "hi"}}}))
        assert app.settings("greeter").greeting == "hi"
        bad = parse_config({"plugins": {"greeter": {"greeting": 3}}})
        with pytest.raises(ConfigError, match=r"\[plugins.greeter\] greeting must be a string"):
            app.reconfigure(bad)
        assert app.settings("greeter").greeting == "hi"
        assert app.config.plugin_tables == {"greeter": {"greeting": "hi"}}
    finally:
        app.close()


# -- the real daemon: in a thread (SIGHUP is DaemonThread.hangup), and once as a subprocess ---


def test_new_settings_apply_to_turns_started_after_the_reload(home, fake, env, threads, caplog):
    caplog.set_level(logging.INFO)
    write_config(home, agent={"persona": "You are Alpha."})
    release = threading.Event()
    fake.add(hold(release, text("first")))
    fake.default = text("second")
    daemon = threads(home, env)
    try:
        drop(home, "one", "m1")
        fake.wait_for_requests(1)
        write_config(home, agent={"persona": "You are Beta."})
        daemon.hangup()
        wait_for(lambda: "configuration reloaded" in caplog.text, 10, "the reload")
    finally:
        release.set()
    wait_for(lambda: len(finals(home)) == 1, 10, "the in-flight turn's reply")
    assert finals(home)[0].text == "first"
    drop(home, "two", "m2")
    wait_for(lambda: len(finals(home)) == 2, 10, "the next reply")
    first, second = fake.requests
    assert "You are Alpha." in first.system_text and "Beta" not in first.system_text
    assert "You are Beta." in second.system_text
    assert daemon.stop() == 0


def test_an_invalid_config_keeps_the_old_one_and_logs_one_error(
    home, fake, env, threads, capsys, caplog
):
    write_config(home, agent={"persona": "You are Alpha."})
    fake.default = text("ok")
    daemon = threads(home, env)
    write_config(home, agent={"persona": "You are Gamma."}, daemon={"workers": "many"})
    assert main(["reload", "--home", str(home)]) == 1
    assert capsys.readouterr().err == (
        "smarthole: reload failed; keeping the running configuration: "
        f"{home / 'config.toml'}: [daemon] workers must be an integer (got 'many')\n"
    )
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "keeping the running configuration" in errors[0]
    drop(home, "still there?", "m1")
    wait_for(lambda: finals(home), 10, "a reply with the old config")
    assert "You are Alpha." in fake.requests[-1].system_text
    assert "Gamma" not in fake.requests[-1].system_text
    assert main(["status", "--json", "--home", str(home)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert "reload failed" in report["last_error"]["message"]
    assert report["last_error"]["at"]
    assert daemon.stop() == 0


def test_a_setting_that_needs_a_restart_is_logged_as_such(home, env, daemons):
    """End to end: ``smarthole reload`` in its own process, a real SIGHUP, a real daemon."""
    daemon = daemons(home, env)
    write_config(home, daemon={"workers": 2})
    result = smarthole("reload", "--home", str(home), env=env)
    assert result.returncode == 0 and result.stdout.startswith("Reloaded "), result.stderr
    assert "configuration reloaded" in daemon.output()
    assert "[daemon] workers changed; it takes effect after a restart" in daemon.output()
    assert daemon.terminate() == 0


def test_reload_without_a_daemon_is_one_line_and_exit_2(home, capsys):
    assert main(["reload", "--home", str(home)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("smarthole: no daemon is running")
    assert stderr.count("\n") == 1


SHOUT = '''
from smarthole import hookimpl


def shout(text: str) -> str:
    """Say it loudly.

    :param text: What to say.
    """
    return text.upper() + "{mark}"


@hookimpl
def register_tools(register):
    register(shout, idempotent=True)


@hookimpl
def startup(app):
    (app.home.root / "shout-started").write_text("yes")
'''


def daemon_state(home) -> dict:
    return json.loads((home / ".smarthole" / "daemon.json").read_text())


def test_a_new_plugin_file_is_loaded_by_a_reload(home, fake, env, threads, caplog):
    from smarthole.testing import tool_use

    caplog.set_level(logging.INFO)
    (home / "plugins").mkdir(exist_ok=True)
    write_config(home, plugins={"paths": ["plugins"]})
    daemon = threads(home, env)
    (home / "plugins" / "shout.py").write_text(SHOUT.replace("{mark}", "!"))
    assert main(["reload", "--home", str(home)]) == 0
    assert (home / "shout-started").read_text() == "yes"  # its startup ran
    assert "reload: plugin shout loaded" in caplog.text
    fake.add(tool_use("shout", {"text": "hi"}))
    fake.add(text("Shouted."))
    drop(home, "Shout hi", "m1")
    wait_for(lambda: finals(home), 10, "the reply")
    assert fake.requests[-1].tool_results[0]["content"] == "HI!"
    assert daemon_state(home)["restart_needed"] == []
    assert daemon.stop() == 0


ECHO_COMMAND = """
from smarthole import hookimpl


@hookimpl
def register_message_commands(register):
    register("echo", lambda context: f"echo: {context.args}", "Say it back.", usage="TEXT")
"""


def test_a_new_plugin_files_message_command_answers_after_a_reload(home, fake, env, threads):
    (home / "plugins").mkdir(exist_ok=True)
    write_config(home, plugins={"paths": ["plugins"]})
    fake.default = text("the model")
    daemon = threads(home, env)
    drop(home, "/echo before", "m1")  # unknown yet: text for the model
    wait_for(lambda: finals(home), 10, "the model's reply")
    (home / "plugins" / "echoing.py").write_text(ECHO_COMMAND)
    assert main(["reload", "--home", str(home)]) == 0
    drop(home, "/echo after", "m2")
    replies = wait_for(lambda: [f for f in read_outbox(home) if f["in_reply_to"] == "m2"], 10)
    assert daemon.stop() == 0
    assert (replies[0]["kind"], replies[0].text) == ("command", "echo: after")
    assert len(fake.requests) == 1  # only /echo before reached the model


def test_a_changed_plugin_file_is_named_as_needing_a_restart(home, fake, env, threads):
    (home / "plugins").mkdir(exist_ok=True)
    (home / "plugins" / "shout.py").write_text(SHOUT.replace("{mark}", "!"))
    write_config(home, plugins={"paths": ["plugins"]})
    daemon = threads(home, env)
    (home / "plugins" / "shout.py").write_text(SHOUT.replace("{mark}", "!!!"))
    write_config(home, plugins={"paths": ["plugins"]}, daemon={"workers": 2})
    assert main(["reload", "--home", str(home)]) == 0
    changed = f"plugin file {home / 'plugins' / 'shout.py'} (changed)"
    assert daemon_state(home)["restart_needed"] == ["[daemon] workers", changed]
    write_config(home, plugins={"paths": ["plugins"]})  # a second reload: still needed
    assert main(["reload", "--home", str(home)]) == 0
    assert daemon_state(home)["restart_needed"] == ["[daemon] workers", changed]
    assert daemon.stop() == 0
