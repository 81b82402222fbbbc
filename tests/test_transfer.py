"""Export, then import: the conversation comes back whole, but for its ids.

``import`` takes the JSON export and the context JSON; for each, exporting the imported
conversation in that format gives back what was imported, title and summary included.
"""

from __future__ import annotations

import io
import json

import pytest

from smarthole.agent.prompts import SUMMARY_SYSTEM, TITLE_SYSTEM
from smarthole.cli import main
from smarthole.testing import text, tool_use
from tests.helpers import drop, run_once, write_config


@pytest.fixture
def conversation(home, fake, env):
    """An ended conversation of two turns, one with a question, titled and summarised."""
    write_config(home, titles={"enabled": True})
    fake.default = lambda request: (
        text("Planning the week")
        if request.system_text == TITLE_SYSTEM
        else text("The week was planned: gym on Tuesday.")
        if request.system_text == SUMMARY_SYSTEM
        else text("Gym on Tuesday, then.")
    )
    fake.add(tool_use("send_message", {"message": "Which days are free?", "is_question": True}))
    fake.add(text("Asked."))
    drop(home, "Plan my week", "m1")
    run_once(home, env)
    drop(home, "Tuesday", "m2")
    run_once(home, env)
    assert main(["new", "--channel", "default", "--home", str(home)]) == 0
    run_once(home, env)  # writes the summary
    return home


def exported(home, capsys, conversation_id: str, form: str) -> dict:
    capsys.readouterr()
    assert main(["export", conversation_id, "--format", form, "--home", str(home)]) == 0
    return json.loads(capsys.readouterr().out)


def without_ids(data: dict) -> dict:
    return {key: value for key, value in data.items() if key != "conversation_id"}


@pytest.mark.parametrize("form", ["json", "context"])
def test_an_export_imported_exports_the_same(conversation, capsys, monkeypatch, form):
    capsys.readouterr()
    assert main(["conversations", "--json", "--home", str(conversation)]) == 0
    (original,) = json.loads(capsys.readouterr().out)
    before = exported(conversation, capsys, original["id"], form)
    if form == "json":
        assert before["title"] == "Planning the week"
        assert before["summary"] == "The week was planned: gym on Tuesday."
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(before)))
    assert main(["import", "-", "--home", str(conversation)]) == 0
    imported = capsys.readouterr().out.strip()
    assert imported != original["id"]
    assert without_ids(exported(conversation, capsys, imported, form)) == without_ids(before)
