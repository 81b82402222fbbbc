"""The example channel of docs/channels.md, run as users run it: a file in a plugins folder."""

from __future__ import annotations

import json
import re

from smarthole.cli import main
from smarthole.testing import text
from tests.helpers import REPO, wait_for, write_config

DOC = (REPO / "docs" / "channels.md").read_text()


def example_code() -> str:
    section = DOC.split("## A complete channel")[1]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    return code


def test_the_spool_channel_of_the_docs_answers_a_file_once(home, fake, env, threads, capsys):
    plugins = home / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "spool_channel.py").write_text(example_code())
    write_config(home, plugins={"paths": [str(plugins)]})
    fake.add(text("Hello from the spool."))
    daemon = threads(home, env)
    spool = home / "spool"
    (spool / "in" / ".note.tmp").write_text("hello spool")
    (spool / "in" / ".note.tmp").rename(spool / "in" / "note.txt")
    replies = wait_for(lambda: sorted((spool / "out").glob("*.txt")), 30, "a reply file")
    assert [r.read_text() for r in replies] == ["[response] Hello from the spool.\n"]
    assert not (spool / "in" / "note.txt").exists()
    assert main(["status", "--json", "--home", str(home)]) == 0
    (channel,) = json.loads(capsys.readouterr().out)["channels"]
    assert channel["name"] == "spool" and channel["state"] == "connected"
    assert channel["waiting"] == 0
    main(["status", "--home", str(home)])
    assert "channel spool: connected" in capsys.readouterr().out
    daemon.stop()
    assert main(["events", "--json", "--home", str(home)]) == 0
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    lifecycle = [(e["type"], e["channel"]) for e in said if e["type"].startswith("channel_")]
    assert lifecycle == [("channel_started", "spool"), ("channel_stopped", "spool")]
