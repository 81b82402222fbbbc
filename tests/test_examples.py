"""The examples people copy work as written: config.example.toml's commented blocks, and every
fenced Python example in docs/."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

from smarthole.app import App
from smarthole.home import Home
from tests.helpers import in_process

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "config.example.toml"


def uncommented(text: str) -> tuple[str, int]:
    """``text`` with each commented example block (``# [table]`` and the ``# key = value``
    lines under it, up to a bare ``#``) uncommented in place; and how many blocks there were."""
    lines, blocks, inside = [], 0, False
    for line in text.splitlines():
        if re.fullmatch(r"# \[[a-z][\w.\"-]*\](\s+#.*)?", line):
            inside, blocks = True, blocks + 1
        elif line.strip() == "#" or not line.startswith("# "):
            inside = False
        lines.append(line[2:] if inside else line)
    return "\n".join(lines) + "\n", blocks


def test_every_commented_example_of_the_config_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKER_TOKEN", "secret")
    text, blocks = uncommented(EXAMPLE.read_text())
    assert blocks >= 5  # plugins.webhook, agents.researcher, mcp, mcp.servers.files, .tracker
    home = Home(tmp_path / "home")
    home.ensure()
    (home.root / "plugins").mkdir()  # as `smarthole init` makes it
    home.config_file.write_text(text)
    app = App.load(home)
    try:
        assert "researcher" in app.team
        assert app.config.plugin_tables["webhook"]["url"].startswith("https://")
        assert set(app.config.mcp.servers) == {"files", "tracker"}
        assert app.config.channels.policy("phone") == "steer"
    finally:
        app.close()


def test_the_uncommenting_finds_a_block_and_leaves_prose():
    text, blocks = uncommented("# Prose first.\n#\n# [x]\n# a = 1   # why\n#\n# more prose\n")
    assert blocks == 1
    assert text.splitlines() == ["# Prose first.", "#", "[x]", "a = 1   # why", "#", "# more prose"]


def python_blocks(document: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", document.read_text(), re.S)


def test_the_mcp_server_of_the_docs_works_as_written(tmp_path, capsys):
    (server,) = python_blocks(REPO / "docs" / "mcp.md")
    home = Home(tmp_path / "home")
    home.ensure()
    (home.root / "shout_server.py").write_text(server)
    toml = re.search(
        r"```toml\n(\[mcp\.servers\.shout\].*?)```", (REPO / "docs" / "mcp.md").read_text(), re.S
    )
    assert toml is not None
    # As written, but with this interpreter (which has the SDK) for "python3".
    home.config_file.write_text(toml.group(1).replace('"python3"', json.dumps(sys.executable)))
    args = ("mcp", "call", "shout", "shout", "--args", '{"text": "hi"}', "--home", str(home.root))
    result = in_process(capsys, *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "HI!"


def test_every_python_example_in_the_docs_runs_as_written(tmp_path, monkeypatch):
    """Each fenced Python block, run alone in a fresh namespace: its imports are all there.
    The plugin guide's ``dice.py`` is importable, as the testing example expects."""
    guide = python_blocks(REPO / "docs" / "plugins.md")[0]
    (tmp_path / "dice.py").write_text(guide)
    monkeypatch.syspath_prepend(str(tmp_path))
    blocks = [
        (document.name, number, block)
        for document in sorted((REPO / "docs").glob("*.md"))
        for number, block in enumerate(python_blocks(document))
    ]
    assert len(blocks) >= 15
    for name, number, block in blocks:
        module = types.ModuleType(f"docs_example_{name[:-3]}_{number}")  # as if imported
        monkeypatch.setitem(sys.modules, module.__name__, module)
        exec(compile(block, f"{name} block {number}", "exec"), module.__dict__)
