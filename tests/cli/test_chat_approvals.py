"""Answering an approval inline in ``smarthole chat``: ``/approve [always]`` and ``/deny
[reason]`` write the same inbox answer file ``smarthole approve``/``deny`` write.

Each test counts the real runs of the test plugin's non-idempotent ``record`` tool (a line of
``tool-runs.log`` each): approved, it runs once; otherwise, never.
"""

from __future__ import annotations

import json
import sys

import pytest

from smarthole.cli import main
from smarthole.testing import text, tool_use
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    in_process,
    read_outbox,
    tool_runs,
    wait_for,
    write_config,
)

HINT = (
    "(answer with /approve, /approve always, or /deny [reason]; "
    "anything else is sent as your answer instead)"
)


@pytest.fixture
def approvals_home(home):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"]},
    )
    return home


def chat(home, capsys, *lines: str):
    """``smarthole chat`` with ``lines`` piped in; a reply that never comes fails in 20 s."""
    typed = "".join(f"{line}\n" for line in lines)
    return in_process(capsys, "chat", "--home", str(home), "--timeout", "20", input=typed)


def approval_id(home) -> str:
    (item,) = [f for f in read_outbox(home) if f["kind"] == "approval"]
    return item["approval"]


def decisions(home) -> list[dict]:
    rows = db(home).execute("SELECT data FROM events WHERE type = 'approval_decided' ORDER BY id")
    return [json.loads(row["data"]) for row in rows]


def test_approve_in_the_chat_runs_the_call_once_and_the_reply_arrives(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Recorded."))
    result = chat(home, capsys, "record once", "/approve")
    assert result.returncode == 0, result.stderr
    wanted = approval_id(home)
    assert "smarthole asks your approval: " in result.stdout
    assert f"{HINT}\napproved {wanted} (record)\n" in result.stdout
    assert result.stdout.rstrip().endswith("smarthole: Recorded.")
    assert tool_runs(home) == ["record once"]
    (result_block,) = fake.requests[-1].tool_results
    assert result_block["content"] == "recorded once"
    assert [(d["decision"], d["by"]) for d in decisions(home)] == [("approved", "cli")]
    assert [f.text for f in finals(home)] == ["Recorded."]


def test_deny_in_the_chat_never_runs_the_call_and_the_model_reads_why(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Fine, I will not."))
    result = chat(home, capsys, "record once", "/deny not now")
    assert result.returncode == 0, result.stderr
    assert f"denied {approval_id(home)} (record)\n" in result.stdout
    assert result.stdout.rstrip().endswith("smarthole: Fine, I will not.")
    assert tool_runs(home) == []
    (result_block,) = fake.requests[-1].tool_results
    assert result_block["is_error"]
    assert result_block["content"] == "Error: denied by the person: not now"


def test_approve_always_in_the_chat_lets_the_next_call_run_without_asking(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "a"}))
    fake.add(tool_use("record", {"value": "b"}))
    fake.add(text("Both recorded."))
    result = chat(home, capsys, "record a and b", "/approve always")
    assert result.returncode == 0, result.stderr
    assert f"approved {approval_id(home)} (record) for the rest of this conversation\n" in (
        result.stdout
    )
    assert result.stdout.rstrip().endswith("smarthole: Both recorded.")
    assert tool_runs(home) == ["record a", "record b"]


def test_approve_with_nothing_waiting_says_so_and_sends_nothing(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    result = chat(home, capsys, "/approve", "/deny", "/approve always")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("no approval waits in this chat; nothing was sent\n") == 3
    assert fake.requests == []
    assert read_outbox(home) == []
    assert db(home).execute("SELECT count(*) FROM messages").fetchone()[0] == 0


def test_a_plain_line_while_a_call_waits_is_the_answer_and_its_reply_arrives(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Understood, not recorded."))
    result = chat(home, capsys, "record once", "yes but later")
    assert result.returncode == 0, result.stderr
    assert result.stdout.rstrip().endswith("smarthole: Understood, not recorded.")
    assert tool_runs(home) == []
    assert [d["decision"] for d in decisions(home)] == ["answered"]


def test_a_chat_that_ends_while_a_call_waits_says_how_to_answer_it(
    approvals_home, fake, environ, capsys
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "once"}))
    result = chat(home, capsys, "record once", "/approve sometimes")
    assert result.returncode == 0, result.stderr
    wanted = approval_id(home)
    assert "say /approve or /approve always (nothing was sent)\n" in result.stdout
    assert (
        f"(approval {wanted} still waits: `smarthole approve {wanted}` or "
        f"`smarthole deny {wanted}` answers it)"
    ) in result.stdout
    assert tool_runs(home) == []


class Typist:
    """A piped stdin whose lines come one at a time, each after its ``before`` step runs."""

    def __init__(self, *lines: tuple[str, object]) -> None:
        self.lines = list(lines)

    def readline(self) -> str:
        if not self.lines:
            return ""
        line, before = self.lines.pop(0)
        if callable(before):
            before()
        return f"{line}\n"

    def isatty(self) -> bool:
        return False


def test_an_approval_answered_elsewhere_shows_its_reply_before_the_next_line(
    approvals_home, fake, environ, capsys, monkeypatch
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Recorded."))

    def approve_from_another_terminal() -> None:
        drop(home, "", "elsewhere", approve=approval_id(home))
        wait_for(lambda: decisions(home), 10, "the answer applied")

    monkeypatch.setattr(
        sys, "stdin", Typist(("record once", None), ("/approve", approve_from_another_terminal))
    )
    code = main(["chat", "--home", str(home), "--timeout", "20"])
    out = capsys.readouterr().out
    assert code == 0
    wanted = approval_id(home)
    # (The tool's own line may come before or after the chat looks: it runs meanwhile.)
    said = [line for line in out.splitlines() if line and not line.startswith("  · ")]
    answered = said.index(f"(approval {wanted} was answered elsewhere: approved by inbox)")
    assert said[answered + 1 :] == [
        "smarthole: Recorded.",
        "no approval waits in this chat; nothing was sent",
    ]
    assert tool_runs(home) == ["record once"]
