"""config.toml: defaults, validation, the example file, and `smarthole init`."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from smarthole.cli import main
from smarthole.config import (
    Config,
    default_config_data,
    load_config,
    parse_config,
    write_default_config,
)
from smarthole.errors import ConfigError
from smarthole.home import Home

EXAMPLE = Path(__file__).parent.parent / "config.example.toml"


def test_example_config_lists_every_setting_with_its_default():
    example = tomllib.loads(EXAMPLE.read_text())
    defaults = default_config_data(plugin_paths=["plugins"])
    assert example == defaults


def test_example_config_parses():
    assert isinstance(parse_config(tomllib.loads(EXAMPLE.read_text())), Config)


def test_missing_config_means_defaults(tmp_path):
    config = load_config(Home(tmp_path))
    assert config.model.name == "claude-haiku-4-5"
    assert config.conversation.idle_timeout_minutes == 30
    assert config.inbox.max_message_bytes == 256 * 1024
    assert config.retry.max_attempts == 8


def test_integers_are_accepted_for_floats():
    config = parse_config({"conversation": {"idle_timeout_minutes": 1}})
    assert config.conversation.idle_timeout_minutes == 1.0
    assert isinstance(config.conversation.idle_timeout_minutes, float)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"modle": {}}, "unknown table [modle]"),
        ({"model": {"nmae": "x"}}, "[model] unknown key 'nmae'"),
        ({"model": {"max_tokens": "lots"}}, "[model] max_tokens must be an integer"),
        ({"model": {"max_tokens": 0}}, "[model] max_tokens must be at least 1"),
        ({"retry": {"base_delay_seconds": True}}, "must be a number"),
        ({"titles": {"enabled": "yes"}}, "must be true or false"),
        ({"plugins": {"paths": "plugins"}}, "must be a list of strings"),
        ({"daemon": 3}, "[daemon] must be a table"),
    ],
)
def test_each_bad_key_is_named(data, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"model": {"max_tokns": 1}},
            "[model] unknown key 'max_tokns' (did you mean 'max_tokens'?)",
        ),
        ({"modle": {}}, "unknown table [modle] (did you mean [model]?)"),
        ({"plugins": {"enabeld": []}}, "[plugins] unknown key 'enabeld' (did you mean 'enabled'?)"),
        (
            {"agents": {"r": {"description": "d", "tool": []}}},
            "[agents.r] unknown key 'tool' (did you mean 'tools'?)",
        ),
    ],
)
def test_an_unknown_key_names_the_known_one_it_is_a_typo_of(data, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert message in str(caught.value)


@pytest.mark.parametrize("data", [{"model": {"colour": 1}}, {"zebra": {}}])
def test_an_unknown_key_far_from_any_suggests_nothing(data):
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    assert "did you mean" not in str(caught.value)


def test_all_bad_keys_are_reported_at_once():
    with pytest.raises(ConfigError) as caught:
        parse_config({"model": {"max_tokens": "x", "name": 3}})
    assert "max_tokens" in str(caught.value) and "name" in str(caught.value)


def test_plugin_tables_are_kept_for_their_plugins():
    config = parse_config({"plugins": {"paths": [], "webhook": {"url": "http://x"}}})
    assert config.plugin_tables == {"webhook": {"url": "http://x"}}


def test_init_creates_the_home_and_never_overwrites(tmp_path, capsys):
    home = tmp_path / "agent"
    assert main(["init", "--home", str(home)]) == 0
    for folder in ("inbox", "outbox", "failed", "workspace", ".smarthole"):
        assert (home / folder).is_dir()
    written = tomllib.loads((home / "config.toml").read_text())
    assert written == default_config_data(plugin_paths=["plugins"])
    (home / "config.toml").write_text('[model]\nname = "mine"\n')
    assert main(["init", "--home", str(home)]) == 0
    assert (home / "config.toml").read_text() == '[model]\nname = "mine"\n'
    assert "left it unchanged" in capsys.readouterr().out


def test_home_comes_from_flag_then_environment_then_default(tmp_path, monkeypatch):
    monkeypatch.setenv("SMARTHOLE_HOME", str(tmp_path / "env"))
    assert Home.resolve(str(tmp_path / "flag")).root == tmp_path / "flag"
    assert Home.resolve(None).root == tmp_path / "env"
    monkeypatch.delenv("SMARTHOLE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert Home.resolve(None).root == tmp_path / "SmartHole"


def test_write_default_config_is_exclusive(tmp_path):
    home = Home(tmp_path)
    assert write_default_config(home)
    assert not write_default_config(home)


def test_bad_config_stops_run_with_exit_2(tmp_path, capsys):
    (tmp_path / "config.toml").write_text("[model]\nmax_tokens = 'x'\n")
    assert main(["run", "--home", str(tmp_path), "--once"]) == 2
    err = capsys.readouterr().err
    assert "max_tokens must be an integer" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("where", ["before", "after"])
def test_home_may_come_before_or_after_the_command(tmp_path, where):
    home = str(tmp_path / "agent")
    argv = ["--home", home, "init"] if where == "before" else ["init", "--home", home]
    assert main(argv) == 0
    assert (tmp_path / "agent" / "config.toml").exists()


def test_init_writes_the_commented_example(tmp_path):
    home = tmp_path / "agent"
    assert main(["init", "--home", str(home)]) == 0
    assert (home / "config.toml").read_text() == EXAMPLE.read_text()
    assert "# Timeout of one model call" in (home / "config.toml").read_text()


def test_init_force_replaces_the_config_and_keeps_a_bak(tmp_path, capsys):
    home = tmp_path / "agent"
    assert main(["init", "--home", str(home)]) == 0
    (home / "config.toml").write_text('[model]\nname = "mine"\n')
    assert main(["init", "--home", str(home), "--force"]) == 0
    assert (home / "config.toml.bak").read_text() == '[model]\nname = "mine"\n'
    assert (home / "config.toml").read_text() == EXAMPLE.read_text()
    assert "config.toml.bak" in capsys.readouterr().out


def test_log_level_must_be_a_known_level():
    with pytest.raises(ConfigError, match=r"\[daemon\] log_level must be one of debug, info"):
        parse_config({"daemon": {"log_level": "loud"}})
