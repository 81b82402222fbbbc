"""The desktop bridge against a real WebSocket server: registration, messages in, answers out.

The bridge runs in this process without a daemon, so every inbox file it writes stays in
``inbox/`` for the test to read. ``test_daemon_bridge.py`` runs it inside the real daemon.
"""

from __future__ import annotations

import json
import logging
import tomllib
from pathlib import Path

import pytest

from smarthole.builtins.desktop import plugin
from smarthole.builtins.desktop.connection import Bridge, backoff_ms
from smarthole.builtins.desktop.records import BridgeRecords
from smarthole.config import parse_config
from smarthole.db.outbox import OutboxItem
from smarthole.errors import ConfigError
from smarthole.formats import utc_now
from tests.helpers import db, wait_for


def inbox_files(home: Path) -> list[tuple[dict, str]]:
    """``(front matter, text)`` of every file in the inbox."""
    found = []
    for path in sorted((home / "inbox").glob("*.md")):
        _, header, body = path.read_text().split("+++\n", 2)
        found.append((tomllib.loads(header), body.rstrip("\n")))
    return found


def events(home: Path, type: str) -> list[dict]:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (type,))
    return [json.loads(row["data"]) for row in rows]


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "rule"),
    [
        ({"name": "9lives"}, "must start with a letter"),
        ({"name": "my notes"}, "only letters, digits, - and _"),
        ({"name": "a" * 65}, "at most 64 characters"),
        ({"description": ""}, "must be 1 to 1024 characters"),
        ({"description": "   "}, "not blank"),
        ({"description": "x" * 1025}, "must be 1 to 1024 characters"),
        ({"url": "http://127.0.0.1:9473"}, "must start with ws:// or wss://"),
        ({"channel": "no spaces"}, "channel 'no spaces' must be"),
    ],
)
def test_a_bad_desktop_setting_is_a_config_error_with_the_desktops_rule(settings, rule):
    with pytest.raises(ConfigError) as caught:
        parse_config({"desktop": settings})
    assert "[desktop]" in str(caught.value) and rule in str(caught.value)


def test_the_bridge_is_off_by_default_and_then_does_nothing(home, desktop):
    assert parse_config({}).desktop.enabled is False
    from smarthole.app import App
    from smarthole.home import Home

    app = App.load(Home(home))
    try:
        app.plugins.call_strict("startup", app=app)
        assert plugin.running(app) is None
        app.plugins.notify("shutdown", app=app)
    finally:
        app.close()
    assert desktop.registrations() == []


def test_the_reconnect_delay_doubles_to_30_seconds_plus_at_most_a_tenth():
    assert [backoff_ms(n, jitter=lambda low, high: low) for n in range(7)] == [
        1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]  # fmt: skip
    assert backoff_ms(3, jitter=lambda low, high: high) == 8800
    assert backoff_ms(10_000, jitter=lambda low, high: low) == 30000


# -- registration -----------------------------------------------------------------------------


def test_registration_sends_name_description_version_and_capabilities(home, desktop, bridge):
    app = bridge(name="notes", description="Keeps my notes.")
    desktop.wait_registered()
    (registration,) = desktop.registrations()
    payload = registration.frame["payload"]
    assert payload["name"] == "notes" and payload["description"] == "Keeps my notes."
    assert payload["version"] and isinstance(payload["capabilities"], list)
    records = BridgeRecords(app.store)
    wait_for(lambda: records.status().get("state") == "connected", message="connected")
    (connected,) = wait_for(lambda: events(home, "bridge_connected"))
    assert connected["url"] == desktop.url and connected["name"] == "notes"


def test_a_refused_registration_is_logged_and_retried_with_backoff(
    home, desktop, bridge, caplog, quick_reconnect
):
    desktop.refusal = {"code": "DUPLICATE_NAME", "message": "Name already taken"}
    caplog.set_level(logging.ERROR, logger="smarthole.builtins.desktop")
    app = bridge()
    desktop.wait_registered(2, timeout=10)  # the first retry comes after a wait (50 ms here)
    assert "DUPLICATE_NAME: Name already taken" in caplog.text
    status = BridgeRecords(app.store).status()
    assert status["state"] in ("error", "connecting")
    wait_for(lambda: 4000 in desktop.close_codes, message="closed with 4000")
    desktop.refusal = None
    desktop.wait_registered(3, timeout=15)
    records = BridgeRecords(app.store)
    wait_for(lambda: records.status().get("state") == "connected", message="connected")
    assert events(home, "bridge_connected"), "connected once the name is free"


# -- messages in ------------------------------------------------------------------------------


def test_a_message_is_acked_only_once_its_inbox_file_exists(home, desktop, bridge):
    desktop.observe = lambda frame: inbox_files(home)
    app = bridge(channel="voice")
    desktop.wait_registered()
    message_id = desktop.route("Add oat milk", routingReason="shopping")
    (ack,) = desktop.wait_response(message_id, "ack")
    assert ack["payload"] == {}
    (received,) = [r for r in desktop.frames("response") if r.frame["payload"]["type"] == "ack"]
    ((fields, text),) = received.seen  # the inbox as it was when the ack arrived
    assert text == "Add oat milk"
    assert fields["id"] == message_id and fields["channel"] == "voice"
    assert fields["metadata"] == {
        "inputMethod": "voice",
        "directRouted": False,
        "routingReason": "shopping",
    }
    assert BridgeRecords(app.store).message(message_id)["state"] == "taken"


def test_the_same_id_twice_is_acked_twice_and_written_once(home, desktop, bridge):
    bridge()
    desktop.wait_registered()
    message_id = desktop.route("hello")
    desktop.wait_response(message_id, "ack")
    desktop.route("hello", message_id=message_id)
    desktop.wait_response(message_id, "ack", count=2)
    assert len(inbox_files(home)) == 1


def test_the_same_id_with_another_text_is_rejected_and_the_first_text_kept(home, desktop, bridge):
    bridge()
    desktop.wait_registered()
    message_id = desktop.route("Add oat milk")
    desktop.wait_response(message_id, "ack")
    desktop.route("Delete all my notes", message_id=message_id)
    (reject,) = desktop.wait_response(message_id, "reject")
    assert reject["payload"] == {"reason": "id already used for a different message"}
    desktop.route("Add oat milk", message_id=message_id)
    desktop.wait_response(message_id, "ack", count=2)
    assert [text for _, text in inbox_files(home)] == ["Add oat milk"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "the message text is empty"),
        ("  \n ", "the message text is empty"),
        ("x" * 3000, "the message is too large"),
    ],
)
def test_a_message_that_cannot_be_taken_is_rejected_without_a_file(
    home, desktop, bridge, text, reason
):
    bridge(sections={"inbox": {"max_message_bytes": 2000}})
    desktop.wait_registered()
    message_id = desktop.route(text)
    (reject,) = desktop.wait_response(message_id, "reject")
    assert reason in reject["payload"]["reason"]
    assert inbox_files(home) == [] and desktop.responses(message_id, "ack") == []


def test_a_message_is_rejected_when_the_inbox_is_not_writable(home, desktop, bridge):
    bridge()
    desktop.wait_registered()
    (home / "inbox").rmdir()
    (home / "inbox").write_text("not a folder")  # root ignores permissions; this stops anyone
    message_id = desktop.route("hello")
    (reject,) = desktop.wait_response(message_id, "reject")
    assert reject["payload"]["reason"].startswith("the inbox is not writable")


@pytest.mark.parametrize(
    ("frame", "warning"),
    [
        (b"\x00binary", "a binary frame"),
        ("{not json", "not JSON"),
        ('{"payload": {}}', 'no "type"'),
        ('["message"]', 'no "type"'),
        ('{"type": "message"}', 'without an object "payload"'),
        ('{"type": "message", "payload": "hi"}', 'without an object "payload"'),
        ('{"type": "shutdown", "payload": {}}', "unknown type 'shutdown'"),
        ('{"type": "message", "payload": {"text": "no id"}}', "without a string id"),
    ],
)
def test_a_bad_frame_is_ignored_with_a_warning_and_the_connection_stays_up(
    home, desktop, bridge, caplog, frame, warning
):
    caplog.set_level(logging.WARNING, logger="smarthole.builtins.desktop")
    bridge()
    desktop.wait_registered()
    desktop.send_raw(frame)
    message_id = desktop.route("still here?")
    desktop.wait_response(message_id, "ack")
    assert warning in caplog.text
    assert {r.connection for r in desktop.frames()} == {1}, "the same connection throughout"
    assert [text for _, text in inbox_files(home)] == ["still here?"]


# -- answers out ------------------------------------------------------------------------------


def item(in_reply_to: str, kind: str = "response") -> OutboxItem:
    return OutboxItem(
        id=f"out-{in_reply_to}-{kind}",
        in_reply_to=in_reply_to,
        conversation=None,
        channel="desktop",
        turn=1,
        kind=kind,
        waiting_for_reply=False,
        text=f"{kind} to {in_reply_to}",
        path=Path("/nowhere"),
        created_at=utc_now(),
    )


def test_only_replies_to_the_desktops_messages_go_back_to_it(home, desktop, bridge):
    app = bridge(name="notes")
    desktop.wait_registered()
    message_id = desktop.route("hello")
    desktop.wait_response(message_id, "ack")
    plugin.deliver(outbox_item=item("from-a-file"), app=app)
    plugin.deliver(outbox_item=item(message_id), app=app)
    plugin.deliver(outbox_item=item(message_id), app=app)  # delivery is at least once: sent once
    (notification,) = desktop.wait_response(message_id, "notification")
    assert notification["payload"] == {
        "title": "notes",
        "body": f"response to {message_id}",
        "priority": "normal",
    }
    later = desktop.route("and again")
    desktop.wait_response(later, "ack")
    plugin.deliver(outbox_item=item(later), app=app)
    desktop.wait_response(later, "notification")
    assert len(desktop.responses(message_id, "notification")) == 1
    assert desktop.responses("from-a-file") == []


def test_a_notification_whose_write_fails_is_owed_again_and_sent_after_reconnecting(
    home, desktop, bridge, quick_reconnect, monkeypatch
):
    """Recorded sent just before the write (at most once); a write that fails undoes that."""
    from smarthole.builtins.desktop import protocol

    encode, failures = protocol.encode, []

    def fails_once(frame):
        if frame["payload"].get("type") == "notification" and not failures:
            failures.append(frame)
            raise OSError("the socket broke")
        return encode(frame)

    monkeypatch.setattr(protocol, "encode", fails_once)
    app = bridge()
    desktop.wait_registered()
    message_id = desktop.route("hello")
    desktop.wait_response(message_id, "ack")
    plugin.deliver(outbox_item=item(message_id), app=app)
    desktop.wait_registered(2)
    desktop.wait_response(message_id, "notification")
    assert len(failures) == 1 and len(desktop.responses(message_id, "notification")) == 1
    sent = BridgeRecords(app.store).delivery(f"out-{message_id}-response")
    assert (sent["state"], sent["attempts"]) == ("sent", 1), "recorded sent before the write"
    assert sent["last_error"] == "OSError: the socket broke"


def test_a_notification_an_older_version_left_waiting_is_sent_after_the_upgrade(
    home, desktop, bridge
):
    """Before the channel API's deliveries, the bridge kept ``reply:`` records of its own."""
    from smarthole.app import App
    from smarthole.home import Home

    old = App.load(Home(home))
    try:
        for outbox_id, state in [("old-sent", "sent"), ("old-waiting", "waiting")]:
            BridgeRecords(old.store).data.set(
                f"reply:{outbox_id}",
                {
                    "desktop_id": f"d-{outbox_id}",
                    "kind": "question",
                    "text": f"asked before the upgrade ({state})",
                    "conversation": None,
                    "created_at": "2026-11-22T09:00:00+00:00",
                    "state": state,
                },
            )
    finally:
        old.close()
    app = bridge(name="notes")
    desktop.wait_registered()
    (notification,) = desktop.wait_response("d-old-waiting", "notification")
    assert notification["payload"] == {
        "title": "notes",
        "body": "asked before the upgrade (waiting)",
        "priority": "high",
    }
    records = BridgeRecords(app.store)
    wait_for(lambda: records.delivery("old-waiting")["state"] == "sent", message="sent")
    assert desktop.responses("d-old-sent") == []


def test_the_status_says_disabled_when_the_bridge_is_off(home, capsys):
    from smarthole.cli import main

    assert main(["status", "--json", "--home", str(home)]) == 3
    bridge = json.loads(capsys.readouterr().out)["desktop"]
    assert bridge["state"] == "disabled" and bridge["notifications_waiting"] == 0
    main(["status", "--home", str(home)])
    assert "desktop bridge: disabled" in capsys.readouterr().out


def test_shutdown_tells_the_desktop_and_records_why(home, desktop, bridge):
    app = bridge()
    desktop.wait_registered()
    app.plugins.notify("shutdown", app=app)
    assert events(home, "bridge_disconnected") == [{"reason": "smarthole is stopping"}]
    wait_for(lambda: desktop.close_codes == [1001], message="a 1001 close")


def test_a_stop_just_after_registration_still_ends_the_session_cleanly(
    home, desktop, bridge, monkeypatch
):
    """Registered is connected: a stop while the connected state is being written is a
    clean disconnect, not a cancelled connection attempt (this raced under load)."""
    record_connected = Bridge._record_connected

    def slow_to_record(self, client_id):
        wait_for(lambda: self._stopping.is_set(), message="the stop")
        record_connected(self, client_id)

    monkeypatch.setattr(Bridge, "_record_connected", slow_to_record)
    app = bridge()
    desktop.wait_registered()
    app.plugins.notify("shutdown", app=app)
    assert events(home, "bridge_disconnected") == [{"reason": "smarthole is stopping"}]
    wait_for(lambda: desktop.close_codes == [1001], message="a 1001 close")
