"""The JSON API: conversations (messages and tasks apart), events and their stream, messages
dropped into the inbox with the inbox's own limits, and aborting a task."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx2 as httpx
import pytest

from smarthole.db.store import Store
from smarthole.db.tasks import Tasks
from smarthole.home import Home
from smarthole.pipeline.message import parse_message
from smarthole.testing import text
from tests.helpers import db, drop, run_once, write_config

from .support import event_ids, script_team


@pytest.fixture
def team_done(team_home, fake, env):
    """A conversation of two turns: a greeting, then a question the team answered."""
    fake.add(text("Hello! How can I help?"), entry_agent=True)
    drop(team_home, "Hi", "m0")
    run_once(team_home, env)
    script_team(fake)
    drop(
        team_home,
        "What is the capital of France? Ask the team.",
        "m1",
        conversation=_cid(team_home),
    )
    run_once(team_home, env)
    return _cid(team_home)


def _cid(home):
    return db(home).execute("SELECT id FROM conversations").fetchone()["id"]


def test_conversations_are_listed_newest_first_with_their_state(client, bearer, team_done):
    listing = client.get("/api/conversations", headers=bearer).json()
    assert listing["total"] == 1 and listing["page"] == listing["pages"] == 1
    (item,) = listing["conversations"]
    assert item["id"] == team_done
    assert (item["state"], item["turns"], item["channel"]) == ("answered", 2, "default")
    assert set(item) == {"id", "title", "channel", "state", "turns", "created_at",
                         "updated_at", "ended_at"}  # fmt: skip


def test_a_conversation_gives_the_human_messages_and_the_tasks_apart(client, bearer, team_done):
    data = client.get(f"/api/conversations/{team_done}", headers=bearer).json()
    said = [(m["turn"], m["role"], m["text"]) for m in data["messages"]]
    assert said == [
        (1, "human", "Hi"),
        (1, "agent", "Hello! How can I help?"),
        (2, "human", "What is the capital of France? Ask the team."),
        (2, "agent", "The team says: Paris."),
    ]
    (task,) = data["tasks"]
    assert (task["turn"], task["status"], task["agents"]) == (
        2,
        "completed",
        ["researcher", "critic"],
    )
    turns = [(t["index"], t["agent"], t["text"]) for t in task["agent_turns"]]
    assert turns == [
        (0, "researcher", "Paris, according to geography.md."),
        (1, "critic", "Confirmed: **Paris**."),
        (2, "researcher", "Done."),
    ]
    (call,) = task["agent_turns"][0]["tool_calls"]
    assert (call["name"], call["input"], call["is_error"]) == (
        "read_file",
        {"path": "geography.md"},
        True,
    )
    assert data["session"]["turn"] == 2 and data["session"]["tokens"]["output"] > 0
    everything_said = json.dumps(data["messages"])
    assert "Confirmed" not in everything_said and "geography" not in everything_said


def test_a_conversation_is_found_by_a_unique_prefix_and_paged_by_turn(client, bearer, team_done):
    data = client.get(
        f"/api/conversations/{team_done[:6]}", params={"before_turn": 2, "turns": 1}, headers=bearer
    ).json()
    assert (data["first_turn"], data["last_turn"], data["earlier"]) == (1, 1, False)
    assert [m["text"] for m in data["messages"]] == ["Hi", "Hello! How can I help?"]
    assert data["tasks"] == []
    missing = client.get("/api/conversations/zzzz", headers=bearer)
    assert missing.status_code == 404 and "no conversation matches" in missing.json()["error"]


def test_events_are_read_after_an_id(client, bearer, team_done, team_home):
    ids = event_ids(team_home)
    first = client.get("/api/events", params={"after": 0, "limit": 3}, headers=bearer).json()
    assert [e["id"] for e in first["events"]] == ids[:3] and first["last_id"] == ids[2]
    rest = client.get("/api/events", params={"after": ids[2]}, headers=bearer).json()
    assert [e["id"] for e in rest["events"]] == ids[3:]
    assert {"id", "type", "at", "conversation", "channel", "turn", "message_id"} <= set(
        rest["events"][0]
    )


def _read_stream(url, headers, count):
    """The first ``count`` events of an SSE stream (and the daemon state line)."""
    events, kinds = [], []
    with httpx.stream("GET", url, headers=headers, timeout=20) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        block: dict[str, str] = {}
        for line in response.iter_lines():
            if line:
                key, _, value = line.partition(": ")
                block[key] = value
                continue
            if "data" in block:
                if block.get("event") == "daemon":
                    kinds.append(json.loads(block["data"]))
                else:
                    events.append((int(block["id"]), json.loads(block["data"])))
            block = {}
            if len(events) == count:
                break
    return events, kinds


def test_the_stream_resumes_after_the_last_id_without_gap_or_repeat(
    team_done, web, web_token, team_home, fake, env
):
    # team_done first: its daemon runs end before the view starts, so the view's first look
    # finds no daemon (a daemon that ended after it started shows only at its next check)
    ids = event_ids(team_home)
    headers = {"authorization": f"Bearer {web_token}"}
    url = f"{web.url}/api/events/stream"
    first, daemon = _read_stream(f"{url}?after=0", headers, 5)
    assert [i for i, _ in first] == ids[:5] and daemon == [{"running": False}]
    assert all(event["id"] == i for i, event in first)
    # new events arrive while nobody listens, then a client resumes with Last-Event-ID
    fake.add(text("Bye."), entry_agent=True)
    drop(team_home, "Thanks", "m2", conversation=team_done)
    run_once(team_home, env)
    everything = event_ids(team_home)
    resumed, _ = _read_stream(url, {**headers, "last-event-id": str(ids[4])}, len(everything) - 5)
    assert [i for i, _ in resumed] == everything[5:]


def test_a_message_becomes_an_inbox_file_the_daemon_reads(client, bearer, team_home, team_done):
    response = client.post(
        "/api/messages",
        json={"text": "And Germany?", "conversation": team_done, "channel": "phone"},
        headers=bearer,
    )
    assert response.status_code == 202
    answer = response.json()
    (path,) = (team_home / "inbox").iterdir()
    assert path.name == answer["file"]
    message = parse_message(path.name, path.read_bytes(), modified=datetime.now(UTC))
    assert (message.id, message.text, message.conversation, message.channel) == (
        answer["id"], "And Germany?", team_done, "phone"
    )  # fmt: skip


def test_a_new_conversation_message(client, bearer, team_home):
    response = client.post(
        "/api/messages", json={"text": "Start over", "new_conversation": True}, headers=bearer
    )
    (path,) = (team_home / "inbox").iterdir()
    message = parse_message(path.name, path.read_bytes(), modified=datetime.now(UTC))
    assert message.new_conversation is True and message.id == response.json()["id"]


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"text": "  "}, 400, "the message text is empty"),
        ({}, 400, "the message text is empty"),
        ({"text": "x", "agents": ["a"]}, 400, "unknown key(s) agents"),
        ({"text": "x", "channel": "no spaces"}, 400, "channel 'no spaces' must be 1-64"),
        ({"text": "x", "conversation": "c", "new_conversation": True}, 400,
         "new_conversation and conversation cannot both be given"),
        ({"text": "x", "new_conversation": "yes"}, 400, "new_conversation must be true or false"),
        ({"text": "x", "conversation": 5}, 400, "conversation must be a string"),
        ({"text": "x" * 300_000}, 413, "the message is too large"),
        (["text"], 400, "the body must be a JSON object"),
    ],
)  # fmt: skip
def test_a_message_the_inbox_would_refuse_is_refused_with_its_reason(
    client, bearer, team_home, body, status, error
):
    response = client.post("/api/messages", json=body, headers=bearer)
    assert response.status_code == status
    assert response.json()["error"].startswith(error)
    assert not list((team_home / "inbox").iterdir())


def test_the_size_limit_is_the_homes(team_home, bearer):
    from starlette.testclient import TestClient

    from smarthole.web.app import create_app

    from .conftest import BASE, HOST, PORT, TOKEN

    app = create_app(Home(team_home), token=TOKEN, host=HOST, port=PORT, max_message_bytes=100)
    with TestClient(app, base_url=BASE) as small:
        response = small.post("/api/messages", json={"text": "x" * 200}, headers=bearer)
    assert response.status_code == 413
    assert response.json()["error"].endswith("the limit is 100)")


def test_a_body_that_is_not_json_is_refused(client, bearer):
    plain = client.post(
        "/api/messages",
        content=b"text=hi",
        headers={**bearer, "content-type": "application/x-www-form-urlencoded"},
    )
    broken = client.post(
        "/api/messages", content=b"{", headers={**bearer, "content-type": "application/json"}
    )
    assert (plain.status_code, broken.status_code) == (415, 400)


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("text/plain; application/json", 415),  # sent cross-site with no preflight
        ("text/plain;charset=utf-8, application/json", 415),
        ("application/jsonx", 415),
        ("application/json", 202),
        ("Application/JSON; charset=utf-8", 202),
    ],
)
def test_only_the_json_media_type_itself_is_taken(client, bearer, team_home, content_type, status):
    response = client.post(
        "/api/messages", content=b'{"text": "hi"}', headers={**bearer, "content-type": content_type}
    )
    assert response.status_code == status, response.text
    assert len(list((team_home / "inbox").iterdir())) == (1 if status == 202 else 0)


def _task(home, status_done=False):
    store = Store.open(home / ".smarthole" / "smarthole.db", clock=lambda: datetime.now(UTC))
    try:
        conversation = store.create_conversation("default")
        task, _ = Tasks(store).create(
            conversation_id=conversation.id, turn=1, message_id="m9", started_by="toolu_9",
            task="Do it", agents=["researcher"], max_turns=2,
        )  # fmt: skip
        return task.id
    finally:
        store.close()


def test_a_task_is_aborted_as_tasks_abort_does(client, bearer, team_home):
    task_id = _task(team_home)
    listed = client.get("/api/tasks", headers=bearer).json()["tasks"]
    assert [(t["id"], t["status"]) for t in listed] == [(task_id, "active")]
    response = client.post(f"/api/tasks/{task_id}/abort", headers=bearer)
    assert response.status_code == 200
    assert response.json()["stopped"] is True  # no daemon runs: aborted at once
    assert db(team_home).execute("SELECT status FROM tasks").fetchone()["status"] == "aborted"
    again = client.post(f"/api/tasks/{task_id}/abort", headers=bearer)
    assert again.status_code == 409 and "already finished (aborted)" in again.json()["error"]
    assert client.post("/api/tasks/nope/abort", headers=bearer).status_code == 404


def test_titles_are_shown_untitled_until_named(client, bearer, home, fake, env):
    write_config(home)
    fake.add(text("ok"))
    drop(home, "hello", "m1")
    run_once(home, env)
    listing = client.get("/api/conversations", headers=bearer).json()["conversations"]
    assert listing[0]["title"] == "Untitled conversation"


def test_the_channels_are_listed_as_status_lists_them(client, bearer, team_home):
    store = Store.open(Home(team_home).database, clock=lambda: datetime.now(UTC))
    try:
        store.plugin_data("channels").set("chat", {})
        store.plugin_data("chat").set("status", {"state": "connected", "last_error": None})
    finally:
        store.close()
    response = client.get("/api/channels", headers=bearer)
    (found,) = response.json()["channels"]
    assert found["name"] == "chat" and found["waiting"] == 0
    assert found["state"] == "error", "no daemon runs: the channel is not connected"
    assert client.get("/api/channels").status_code == 401
