"""The bridge inside the real daemon: answers as notifications, across outages.

The fake desktop routes messages; the fake Messages API answers them; the test watches the
notifications that come back, through disconnects, restarts and a kill -9. The daemon runs in
a thread of this process (``threads``), and as a subprocess where a kill -9 is the point.
"""

from __future__ import annotations

import json
import threading

from smarthole.cli import main
from smarthole.testing import error, hold, text, tool_use
from tests.helpers import db, finals, in_process, read_outbox, wait_for

from .desktop import FakeDesktop, enable_bridge


def status(home, capsys) -> dict:
    assert main(["status", "--json", "--home", str(home)]) == 0  # 0: a daemon is running
    return json.loads(capsys.readouterr().out)["desktop"]


def event_data(home, type: str) -> list[dict]:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (type,))
    return [json.loads(row["data"]) for row in rows]


def test_a_reply_comes_back_as_a_notification(home, fake, env, threads, desktop, capsys):
    fake.add(text("Added oat milk."))
    enable_bridge(home, desktop, name="notes")
    threads(home, env)
    desktop.wait_registered()
    message_id = desktop.route("Add oat milk", routingReason="shopping list")
    desktop.wait_response(message_id, "ack")
    (notification,) = desktop.wait_response(message_id, "notification")
    assert notification["payload"] == {
        "title": "notes",
        "body": "Added oat milk.",
        "priority": "normal",
    }
    (reply,) = finals(home)
    assert reply["in_reply_to"] == message_id and reply["channel"] == "desktop"
    row = (
        db(home).execute("SELECT payload FROM inbox WHERE message_id = ?", (message_id,)).fetchone()
    )
    assert json.loads(row["payload"])["metadata"]["routingReason"] == "shopping list"
    bridge = status(home, capsys)
    assert bridge["state"] == "connected" and bridge["name"] == "notes"
    assert bridge["url"] == desktop.url and bridge["notifications_waiting"] == 0


def test_a_question_is_high_priority_and_the_answer_continues(home, fake, env, threads, desktop):
    fake.add(tool_use("send_message", {"message": "Which list?", "is_question": True}))
    fake.add(text("I asked which list."))
    fake.add(text("Added to groceries."))
    enable_bridge(home, desktop)
    threads(home, env)
    desktop.wait_registered()
    first = desktop.route("Add milk")
    question, final = desktop.wait_response(first, "notification", count=2)
    assert question["payload"] == {"title": "smarthole", "body": "Which list?", "priority": "high"}
    assert final["payload"]["priority"] == "normal"
    second = desktop.route("groceries")
    (answer,) = desktop.wait_response(second, "notification")
    assert answer["payload"]["body"] == "Added to groceries."
    assert "Which list?" in fake.requests[-1].system_text, "taken as the answer"


def test_an_error_reply_is_titled_smarthole_error(home, fake, env, threads, desktop):
    fake.add(error(400, "invalid_request_error", "nope"))
    enable_bridge(home, desktop)
    threads(home, env)
    desktop.wait_registered()
    message_id = desktop.route("hello")
    (notification,) = desktop.wait_response(message_id, "notification")
    assert notification["payload"]["title"] == "SmartHole Error"
    assert notification["payload"]["priority"] == "high"


def test_a_duplicate_id_is_acked_twice_and_answered_once(home, fake, env, threads, desktop):
    fake.default = text("Hello!")
    enable_bridge(home, desktop)
    threads(home, env)
    desktop.wait_registered()
    message_id = desktop.route("hi")
    desktop.wait_response(message_id, "notification")
    desktop.route("hi", message_id=message_id)
    desktop.wait_response(message_id, "ack", count=2)
    marker = desktop.route("anything else?")
    desktop.wait_response(marker, "notification")
    assert len(desktop.responses(message_id, "notification")) == 1
    assert len(fake.requests) == 2


def test_replies_made_while_the_desktop_is_away_arrive_after_it_returns(
    home, fake, env, threads, desktop, capsys, quick_reconnect
):
    release = threading.Event()
    fake.add(hold(release, text("First answer.")))
    fake.add(text("Second answer."))
    enable_bridge(home, desktop, sections={"daemon": {"workers": 1}})
    threads(home, env)
    desktop.wait_registered()
    first = desktop.route("first")
    second = desktop.route("second")
    desktop.wait_response(second, "ack")
    desktop.stop()
    release.set()
    wait_for(lambda: len(finals(home)) == 2, 20, "both replies")
    wait_for(lambda: status(home, capsys)["notifications_waiting"] == 2, 20, "two waiting")
    (gone,) = wait_for(lambda: event_data(home, "bridge_disconnected"), 20, "the event")
    assert gone["reason"]
    assert status(home, capsys)["state"] in ("error", "connecting")

    desktop.start()  # the same port
    desktop.wait_registered(2, timeout=20)
    desktop.wait_response(second, "notification")
    notifications = [r.frame["payload"] for r in desktop.frames("response") if r.connection == 2]
    assert [n["messageId"] for n in notifications] == [first, second], "oldest first"
    assert [n["payload"]["body"] for n in notifications] == ["First answer.", "Second answer."]
    wait_for(lambda: status(home, capsys)["notifications_waiting"] == 0, 20, "none waiting")
    assert len(event_data(home, "bridge_connected")) == 2


def test_a_reply_survives_kill_9_between_the_ack_and_the_reply(
    home, fake, env, daemons, threads, desktop
):
    release = threading.Event()
    fake.add(hold(release, text("never seen")))
    enable_bridge(home, desktop)
    daemon = daemons(home, env)
    desktop.wait_registered()
    message_id = desktop.route("remember this")
    desktop.wait_response(message_id, "ack")
    fake.wait_for_requests(1, timeout=10)
    daemon.kill()
    release.set()
    assert read_outbox(home) == []

    fake.add(text("Remembered."))
    threads(home, env)
    desktop.wait_registered(2)
    (notification,) = desktop.wait_response(message_id, "notification")
    assert notification["payload"]["body"] == "Remembered."
    fake.add(text("Still here."))
    marker = desktop.route("still there?")
    desktop.wait_response(marker, "notification")
    assert len(desktop.responses(message_id, "notification")) == 1, "exactly once"


def test_a_restarted_daemon_does_not_send_a_notification_again(home, fake, env, threads, desktop):
    fake.default = text("Once.")
    enable_bridge(home, desktop)
    daemon = threads(home, env)
    desktop.wait_registered()
    message_id = desktop.route("hello")
    desktop.wait_response(message_id, "notification")
    assert daemon.stop() == 0
    threads(home, env)
    desktop.wait_registered(2)
    marker = desktop.route("again")
    desktop.wait_response(marker, "notification")
    assert len(desktop.responses(message_id, "notification")) == 1


def test_status_shows_a_desktop_that_is_not_there(home, env, threads, capsys):
    absent = FakeDesktop().start()
    absent.stop()  # a port nobody listens on
    enable_bridge(home, absent)
    threads(home, env)
    bridge = wait_for(
        lambda: (b := status(home, capsys))["state"] == "error" and b["last_error"] and b,
        20,
        "the error state",
    )
    assert bridge["url"] == absent.url
    assert main(["status", "--home", str(home)]) == 0
    line = f"desktop bridge: error ({absent.url} as smarthole) · last error:"
    assert line in capsys.readouterr().out


def test_an_approval_is_a_high_priority_notification_and_a_spoken_no_answers_it(
    home, fake, env, threads, desktop
):
    from tests.helpers import TEST_PLUGINS

    fake.add(tool_use("record", {"value": "milk"}))
    fake.add(text("I did not record it."))
    enable_bridge(
        home,
        desktop,
        sections={
            "plugins": {"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
            "approvals": {"tools": ["record"]},
        },
    )
    threads(home, env)
    desktop.wait_registered()
    first = desktop.route("Record milk")
    (asked,) = desktop.wait_response(first, "notification")
    assert asked["payload"]["priority"] == "high" and "record" in asked["payload"]["body"]
    desktop.route("No, leave it.")  # a plain message: the person's answer instead
    _, final = desktop.wait_response(first, "notification", count=2)
    assert final["payload"]["body"] == "I did not record it."
    assert not (home / "tool-runs.log").exists()
    assert fake.requests[-1].tool_results[0]["content"].endswith("No, leave it.")


def test_forget_erases_the_desktops_records_of_the_conversation(
    home, fake, env, threads, desktop, capsys
):
    fake.add(text("Noted zqxcanary."))
    enable_bridge(home, desktop)
    threads(home, env)
    desktop.wait_registered()
    message_id = desktop.route("Remember zqxcanary")
    desktop.wait_response(message_id, "notification")
    (reply,) = finals(home)

    def desktop_keys() -> list[str]:
        rows = db(home).execute("SELECT key FROM plugin_data WHERE plugin = 'desktop'")
        return sorted(row["key"] for row in rows if not row["key"].startswith("external:"))

    assert desktop_keys() == ["delivery:" + reply["id"], "message:" + message_id, "status"]
    done = in_process(capsys, "forget", reply["conversation"], "--yes", "--home", str(home))
    assert done.returncode == 0, done.stderr
    assert desktop_keys() == ["status"]
