"""The web view's composer takes the same message commands: posted, then answered by the
daemon as a ``command`` item, without a model call."""

from __future__ import annotations

from tests.helpers import read_outbox, run_once


def test_a_command_posted_from_the_page_is_answered_by_smarthole(
    client, bearer, team_home, fake, env
):
    response = client.post(
        "/api/messages", json={"text": "/status", "channel": "web"}, headers=bearer
    )
    assert response.status_code == 202
    run_once(team_home, env)
    (reply,) = read_outbox(team_home)
    assert reply["in_reply_to"] == response.json()["id"]
    assert (reply["kind"], reply["command"], reply["ok"]) == ("command", "status", True)
    assert "This channel (web, busy policy queue)" in reply.text
    assert fake.requests == []
