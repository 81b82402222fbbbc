"""Loading plugins: built-ins, entry points and folders; choosing them; listing them."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from smarthole.app import App
from smarthole.cli import main
from smarthole.config import parse_config
from smarthole.errors import PluginError
from smarthole.home import Home
from smarthole.plugins import load_plugins
from tests.helpers import REPO, forget_modules_under, in_process, smarthole, write_config

GOOD = '''
from smarthole import hookimpl

def wave(name: str) -> str:
    """Wave at someone."""
    return f"*waves at {name}*"

@hookimpl
def register_tools(register):
    register(wave)
'''


@pytest.fixture
def plugin_dir(tmp_path):
    folder = tmp_path / "myplugins"
    folder.mkdir()
    (folder / "waver.py").write_text(GOOD)
    return folder


def load(home, **plugins):
    return App.load(Home(home), parse_config({"plugins": plugins}), env={})


def test_builtins_load_and_provide_the_core_tools(tmp_path):
    app = load(tmp_path)
    assert app.plugins.info["conversation"].source == "built-in"
    assert app.plugins.info["workspace"].source == "built-in"
    names = {tool.name for tool in app.tools}
    assert {
        "send_message",
        "end_conversation",
        "get_conversation",
        "search_conversations",
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "search_files",
    } <= names


def test_folder_plugins_load_by_file(tmp_path, plugin_dir):
    app = load(tmp_path, paths=[str(plugin_dir)])
    assert app.plugins.info["waver"].source == "folder"
    assert app.plugins.info["waver"].location == str(plugin_dir / "waver.py")
    assert app.tools.get("wave").plugin == "waver"


def test_relative_plugin_folders_are_relative_to_the_home(tmp_path, plugin_dir):
    app = load(plugin_dir.parent, paths=["myplugins"])
    assert "waver" in app.plugins.info


def test_a_plugin_that_cannot_import_names_its_file(tmp_path, plugin_dir):
    (plugin_dir / "broken.py").write_text("import nonexistent_module_xyz\n")
    with pytest.raises(PluginError) as caught:
        load(tmp_path, paths=[str(plugin_dir)])
    assert str(plugin_dir / "broken.py") in str(caught.value)
    assert "nonexistent_module_xyz" in str(caught.value)


def test_a_disabled_broken_plugin_does_not_stop_startup(tmp_path, plugin_dir):
    (plugin_dir / "broken.py").write_text("raise SystemError('boom')\n")
    app = load(tmp_path, paths=[str(plugin_dir)], disabled=["broken"])
    assert "waver" in app.plugins.info and "broken" not in app.plugins.info


def test_a_misspelled_hook_fails_loudly(tmp_path, plugin_dir):
    (plugin_dir / "typo.py").write_text(
        "from smarthole import hookimpl\n@hookimpl\ndef delivr(outbox_item):\n    pass\n"
    )
    with pytest.raises(PluginError, match="delivr"):
        load(tmp_path, paths=[str(plugin_dir)])


def test_enabled_limits_non_builtin_plugins(tmp_path, plugin_dir):
    (plugin_dir / "other.py").write_text("")
    app = load(tmp_path, paths=[str(plugin_dir)], enabled=["other"])
    assert "other" in app.plugins.info and "waver" not in app.plugins.info
    assert "workspace" in app.plugins.info


def test_smarthole_plugins_environment_variable_wins(tmp_path, plugin_dir):
    plugins = load_plugins(
        home_root=tmp_path,
        folders=[str(plugin_dir)],
        enabled=["nothing"],
        env={"SMARTHOLE_PLUGINS": "waver"},
    )
    assert "waver" in plugins.info


def test_builtins_can_be_disabled(tmp_path):
    app = load(tmp_path, disabled=["workspace"])
    assert app.tools.get("read_file") is None and app.tools.get("send_message")


def install(site: Path, name: str, source: str) -> None:
    """Install plugin ``name`` into ``site`` as a real distribution with an entry point."""
    module = f"smarthole_{name}"
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text(source)
    dist = site / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[smarthole]\n{name} = {module}\n")


@pytest.fixture
def third_party(tmp_path, monkeypatch) -> Iterator[Path]:
    """A plugin named "waver" installed in the environment, as someone else's package would be."""
    site = tmp_path / "third-party"
    install(site, "waver", GOOD)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    installed = entry_points(group="smarthole")
    assert "waver" in installed.names, "the distribution is really installed"
    yield site
    forget_modules_under(site)


def test_entry_point_plugins_load(tmp_path, plugin_site):
    install(plugin_site, "waver", GOOD)
    app = load(tmp_path)
    assert app.plugins.info["waver"].source == "entry point"
    assert app.plugins.info["waver"].location == "smarthole_waver"


def test_plugins_installed_in_the_environment_do_not_reach_the_tests(tmp_path, third_party):
    app = load(tmp_path)
    assert "waver" not in app.plugins.info
    # A plugin of the test's own with the same name loads as if nothing else were installed.
    waver = importlib.import_module("smarthole_waver")
    app = App.load(Home(tmp_path), parse_config({}), extra_plugins=[("waver", waver)], env={})
    assert app.plugins.info["waver"].source == "embedded"


def test_a_test_that_installs_entry_points_sees_only_its_own(tmp_path, third_party, plugin_site):
    install(plugin_site, "greeter", "")
    app = load(tmp_path)
    assert app.plugins.info["greeter"].source == "entry point"
    assert "waver" not in app.plugins.info


def test_a_daemon_subprocess_ignores_installed_plugins(home, env, third_party):
    result = smarthole(
        "plugins", "--home", str(home), "--json", env={**env, "PYTHONPATH": str(third_party)}
    )
    assert result.returncode == 0, result.stderr
    assert "waver" not in {plugin["name"] for plugin in json.loads(result.stdout)}


def test_duplicate_tool_names_are_refused(tmp_path, plugin_dir):
    (plugin_dir / "copycat.py").write_text(GOOD)
    with pytest.raises(PluginError, match="already registered by plugin"):
        load(tmp_path, paths=[str(plugin_dir)])


def test_plugins_command_lists_plugins_hooks_and_tools(home, capsys):
    write_config(home, plugins={"paths": [str(REPO / "plugins")]})
    assert main(["plugins", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "workspace  (built-in: smarthole.builtins.workspace.plugin)" in out
    assert "tool read_file:" in out and "tool send_message: Send a message" in out
    assert "webhook  (folder: " in out and "hooks: " in out
    assert main(["plugins", "--home", str(home), "--json"]) == 0
    listing = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert listing["conversation"]["hooks"] == ["register_tools"]
    assert "deliver" in listing["webhook"]["hooks"]
    assert listing["desktop_notify"]["source"] == "folder"
    assert "git_autocommit" in listing


def test_a_broken_plugin_stops_run_with_exit_2(home, environ, tmp_path, capsys):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "explodes.py").write_text("1 / 0\n")
    write_config(home, plugins={"paths": [str(folder)]})
    result = in_process(capsys, "run", "--home", str(home), "--once")
    assert result.returncode == 2
    assert (
        f"plugin file {folder / 'explodes.py'} failed to import: ZeroDivisionError" in result.stderr
    )


def test_plugin_data_persists_across_apps(tmp_path):
    app = load(tmp_path)
    app.plugin_data("memo").set("greeting", {"text": "hi"})
    app.close()
    again = load(tmp_path)
    assert again.plugin_data("memo").get("greeting") == {"text": "hi"}
    assert again.plugin_data("other").get("greeting") is None
    again.close()
