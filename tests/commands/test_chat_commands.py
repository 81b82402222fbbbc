"""``smarthole chat`` takes the same commands: each is sent as a message, and its reply shown."""

from __future__ import annotations

import pytest

from smarthole.testing import text
from tests.helpers import in_process, read_outbox


def chat(home, capsys, *lines: str):
    typed = "".join(f"{line}\n" for line in lines)
    return in_process(capsys, "chat", "--home", str(home), "--timeout", "20", input=typed)


@pytest.mark.parametrize(
    "line, shown",
    [
        ("/help", "smarthole: Commands (anything else goes to the agent"),
        ("/status", "smarthole: smarthole is running."),
        ("/usage", "Today (UTC)"),
        ("/list", "smarthole: No conversations in this channel yet."),
    ],
)
def test_a_command_typed_in_chat_is_answered_by_smarthole(home, fake, environ, capsys, line, shown):
    result = chat(home, capsys, line)
    assert result.returncode == 0, result.stderr
    assert shown in result.stdout
    assert fake.requests == []


def test_new_in_chat_starts_a_new_conversation_with_its_text(home, fake, environ, capsys):
    fake.add(text("about cats"))
    fake.add(text("about dogs"))
    result = chat(home, capsys, "cats", "/new dogs")
    assert result.returncode == 0, result.stderr
    assert "smarthole: about dogs" in result.stdout
    assert "cats" not in str(fake.requests[1].messages)
    conversations = {f["conversation"] for f in read_outbox(home) if f["kind"] == "response"}
    assert len(conversations) == 2


def test_approve_with_an_id_goes_to_the_daemon_when_nothing_waits_here(home, fake, environ, capsys):
    result = chat(home, capsys, "/deny 0123abcd no thanks")
    assert result.returncode == 0, result.stderr
    assert "smarthole: No approval has the id 0123abcd." in result.stdout
