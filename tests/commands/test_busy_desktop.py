"""A burst over the desktop bridge in a ``collect`` channel: the messages are taken as any
other channel's, answered together, and the shared reply comes back as one notification."""

from __future__ import annotations

import threading

from smarthole.testing import hold, text
from tests.desktop.desktop import FakeDesktop, enable_bridge
from tests.helpers import finals, wait_for

from .bursts import new_content, statuses


def test_a_collected_desktop_burst_gets_one_shared_notification(home, fake, env, threads):
    desktop = FakeDesktop().start()
    gate = threading.Event()
    fake.add(hold(gate, text("The first, answered.")))
    fake.add(text("The other two, answered together."))
    wanted = {"d1": "word-one-x", "d2": "word-two-x", "d3": "word-three-x"}
    try:
        enable_bridge(home, desktop, sections={"channels": {"busy": "collect"}})
        threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
        desktop.wait_registered()
        desktop.route(wanted["d1"], message_id="d1")
        fake.wait_for_requests(1)
        desktop.burst([("d2", wanted["d2"]), ("d3", wanted["d3"])])
        for message_id in wanted:
            desktop.wait_response(message_id, "ack")
        wait_for(lambda: len(statuses(home)) == 3, 20, "the burst to be claimed")
        gate.set()
        wait_for(lambda: set(statuses(home).values()) == {"done"}, 30, "every reply")
        (first,) = desktop.wait_response("d1", "notification")
        (shared,) = desktop.wait_response("d2", "notification")
    finally:
        gate.set()
        desktop.stop()
    assert first["payload"]["body"] == "The first, answered."
    assert shared["payload"]["body"] == "The other two, answered together."
    assert desktop.responses("d3", "notification") == []  # answered by d2's notification
    assert new_content(fake, wanted) == {"d1": 1, "d2": 1, "d3": 1}
    (together,) = [f for f in finals(home) if f.fields.get("answers")]
    assert together["answers"] == ["d2", "d3"] and together["channel"] == "desktop"
