"""A burst of messages from the desktop: every one acked once, durably, on one connection.

The fake desktop pings every half second and drops a client that has not answered within
two; a bridge that stops reading the socket while it stores a backlog misses that pong.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from smarthole.builtins.desktop.records import BridgeRecords
from tests.helpers import wait_for

from .desktop import FakeDesktop

BURST = 1500
TIGHT_KEEPALIVE = {"ping_interval": 0.5, "ping_timeout": 2.0}


def ids_on_disk(inbox: Path) -> set[str]:
    """The message ids of the inbox files (``<stamp>Z-<id>.md``, see ``drop_message``)."""
    return {name.split("Z-", 1)[1].removesuffix(".md") for name in os.listdir(inbox)}


def acked(desktop: FakeDesktop) -> Counter[str]:
    return Counter(
        r.frame["payload"]["messageId"]
        for r in desktop.frames("response")
        if r.frame["payload"]["type"] == "ack"
    )


@pytest.mark.parametrize("desktop", [TIGHT_KEEPALIVE], indirect=True)
def test_a_burst_is_acked_in_full_without_dropping_the_connection(home, desktop, bridge):
    on_disk: set[str] = set()

    def file_exists(frame: dict[str, Any]) -> bool | None:
        """At each ack, as it arrives: is its message's file already in the inbox?"""
        payload = frame.get("payload", {})
        if frame.get("type") != "response" or payload.get("type") != "ack":
            return None
        if payload["messageId"] not in on_disk:
            on_disk.update(ids_on_disk(home / "inbox"))  # listed about once a batch
        return payload["messageId"] in on_disk

    desktop.observe = file_exists
    app = bridge()
    desktop.wait_registered()
    messages = [(f"b{n:05d}", f"burst message {n}") for n in range(BURST)]
    desktop.burst(messages)
    wait_for(
        lambda: sum(acked(desktop).values()) >= BURST or desktop.close_codes,
        timeout=120,
        message=f"{BURST} acks or a dropped connection",
    )
    assert desktop.close_codes == [], "the connection was dropped"
    assert len(desktop.registrations()) == 1
    assert acked(desktop) == Counter({message_id: 1 for message_id, _ in messages})
    assert all(r.seen for r in desktop.frames("response")), "an ack came before its file"
    assert ids_on_disk(home / "inbox") == {message_id for message_id, _ in messages}
    records = BridgeRecords(app.store)
    assert {records.message(message_id)["state"] for message_id, _ in messages} == {"taken"}
