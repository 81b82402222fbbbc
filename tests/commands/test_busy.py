"""The busy policy: messages that arrive while a turn runs, in bursts of 3 and of 20.

Each test holds the first turn's model call until the burst is claimed, then lets it go, and
counts in the fake's request log how often each text reached the model as new content (once),
and in the outbox how many final replies each message got (one).
"""

from __future__ import annotations

import threading

import pytest

from smarthole.testing import hold, stalled, text, tool_use
from tests.helpers import (
    TEST_PLUGINS,
    drop,
    drop_folder,
    finals,
    image_bytes,
    in_process,
    read_outbox,
    run_once,
    tool_runs,
    wait_for,
    write_config,
)

from .bursts import (
    command_replies,
    events_of,
    finals_per_message,
    new_content,
    statuses,
    texts,
)


def burst(fake, home, env, threads, *, policy: str, size: int, first):
    write_config(
        home,
        channels={"busy": policy},
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
    )
    gate = threading.Event()
    fake.add(hold(gate, first))
    fake.default = text("ok")
    wanted = texts(size)
    daemon = threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
    drop(home, wanted["m00"], "m00")
    fake.wait_for_requests(1)
    for number, (message_id, said) in enumerate(list(wanted.items())[1:], start=1):
        drop(home, said, message_id, timestamp=f"2030-01-01T00:00:{number:02d}Z")
    wait_for(lambda: len(statuses(home)) == size + 1, 20, "the burst to be claimed")
    gate.set()
    wait_for(
        lambda: all(s in ("done", "dead") for s in statuses(home).values()),
        60,
        "every message to be answered",
    )
    daemon.stop()
    ids = list(wanted)
    assert new_content(fake, wanted) == {message_id: 1 for message_id in ids}
    assert finals_per_message(home, ids) == {message_id: 1 for message_id in ids}
    assert set(statuses(home).values()) == {"done"}
    return wanted


@pytest.mark.parametrize("size", [3, 20])
def test_queue_answers_each_message_in_its_own_turn(fake, home, env, threads, size):
    burst(fake, home, env, threads, policy="queue", size=size, first=text("first"))
    assert len(fake.requests) == size + 1
    assert len(finals(home)) == size + 1


@pytest.mark.parametrize("size", [3, 20])
def test_collect_answers_the_burst_in_one_turn(fake, home, env, threads, size):
    wanted = burst(fake, home, env, threads, policy="collect", size=size, first=text("first"))
    assert len(fake.requests) == 2
    collected = fake.requests[1].last_user_text
    positions = [collected.index(said) for said in list(wanted.values())[1:]]
    assert positions == sorted(positions)  # in arrival order
    assert f"[message 1 of {size}, sent 2030-01-01T00:00:01" in collected
    shared = [f for f in finals(home) if f.fields.get("answers")]
    assert [f["answers"] for f in shared] == [list(wanted)[1:]]
    assert len(events_of(home, "message_collected")) == size - 1


@pytest.mark.parametrize("size", [3, 20])
def test_steer_gives_the_burst_to_the_running_turn_beside_tool_results(
    fake, home, env, threads, size
):
    first = tool_use("snapshot", {"label": "a cat"})
    wanted = burst(fake, home, env, threads, policy="steer", size=size, first=first)
    assert len(fake.requests) == 2
    steered = fake.requests[1]
    assert steered.tool_results  # beside the tool's result, in the same user message
    assert "a new message from the person" in steered.last_user_text
    (shared,) = finals(home)
    assert shared["answers"] == list(wanted)
    assert [e["message_id"] for e in events_of(home, "message_steered")] == list(wanted)[1:]


@pytest.mark.parametrize("size", [3, 20])
def test_interrupt_stops_the_running_turn_and_answers_the_new_message(
    fake, home, env, threads, size
):
    first = tool_use("snapshot", {"label": "a cat"})
    burst(fake, home, env, threads, policy="interrupt", size=size, first=first)
    replies = {f["in_reply_to"]: f for f in finals(home)}
    assert "Interrupted by a newer message" in replies["m00"].text
    (interrupted,) = events_of(home, "turn_interrupted")
    assert interrupted == {
        "message_id": "m00",
        "reason": "interrupted by a newer message",
        "resumes": False,
    }
    # The model call was in flight (held) when the burst came: it was cut, its tool call never
    # kept or run, and the next turn sees that the interrupted turn was answered, and how.
    assert tool_runs(home) == []
    assert "snapshot" not in str(fake.requests[1].messages)
    assert "(Interrupted by a newer message.)" in str(fake.requests[1].messages)


@pytest.mark.parametrize("halt", ["interrupt", "/stop"])
def test_a_halt_hangs_up_the_reply_streaming_in(fake, home, env, threads, halt):
    """A turn halted mid-stream stops at once: the model call is hung up, not waited for
    (the stalled reply is never released), and what it had streamed is not kept."""
    policy = "interrupt" if halt == "interrupt" else "queue"
    write_config(home, channels={"busy": policy})
    never = threading.Event()
    fake.add(stalled(never, text("a long story that never ends")))
    fake.default = text("the next one")
    daemon = threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
    drop(home, "tell me a story", "m1")
    fake.wait_for_stall(1, timeout=20)
    drop(home, "actually, stop" if halt == "interrupt" else "/stop", "m2")
    fake.wait_for_hang_up(1, timeout=20)
    wait_for(lambda: set(statuses(home).values()) == {"done"}, 30, "both messages answered")
    daemon.stop()
    assert not never.is_set()
    (reply,) = [f for f in finals(home) if f["in_reply_to"] == "m1"]
    assert "a long story" not in reply.text
    expected = "Interrupted by a newer message" if halt == "interrupt" else "Stopped by /stop"
    assert expected in reply.text
    (interrupted,) = events_of(home, "turn_interrupted")
    assert interrupted["message_id"] == "m1"
    if halt == "interrupt":  # the new message's turn follows and sees the halted one
        assert len(fake.requests) == 2
        assert "actually, stop" in fake.requests[1].last_user_text
        assert "tell me a story" not in fake.requests[1].last_user_text  # given once, as new
        assert "(Interrupted by a newer message.)" in str(fake.requests[1].messages)


def test_stop_runs_at_once_and_stops_the_turn_at_its_next_safe_point(fake, home, env, threads):
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]})
    gate = threading.Event()
    fake.add(hold(gate, tool_use("snapshot", {"label": "a cat"})))
    fake.default = text("should not be asked")
    daemon = threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
    drop(home, "take a picture", "m1")
    fake.wait_for_requests(1)
    drop(home, "/status", "s1")
    status = wait_for(lambda: [f for f in command_replies(home) if f["in_reply_to"] == "s1"])
    assert "a turn runs (message m1)" in status[0].text  # answered while the turn runs
    drop(home, "/stop", "x1")
    wait_for(lambda: [f for f in command_replies(home) if f["in_reply_to"] == "x1"])
    gate.set()
    wait_for(lambda: statuses(home).get("m1") == "done", 30, "the stopped turn's reply")
    daemon.stop()
    (reply,) = [f for f in finals(home) if f["in_reply_to"] == "m1"]
    assert "Stopped by /stop" in reply.text
    assert len(fake.requests) == 1  # the tool call was not followed by another model call


def test_show_lists_the_messages_a_turn_answered_and_status_each_policy(
    fake, home, env, threads, capsys
):
    burst(fake, home, env, threads, policy="collect", size=3, first=text("first"))
    config = (home / "config.toml").read_text()
    (home / "config.toml").write_text(config + '\n[channels.phone]\nbusy = "steer"\n')
    (reply,) = [f for f in finals(home) if f.fields.get("answers")]
    shown = in_process(capsys, "show", reply["conversation"], "--home", str(home))
    assert "   answers messages: m01, m02, m03" in shown.stdout
    status = in_process(capsys, "status", "--home", str(home))
    assert "busy policy: collect (phone: steer)" in status.stdout


def test_approve_in_the_channel_of_the_waiting_call_is_not_stuck_behind_it(
    fake, home, env, threads
):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"]},
    )
    fake.add(tool_use("record", {"value": "once"}))
    fake.add(text("Recorded."))
    daemon = threads(home, env, ready=False).wait_ready(60)  # a loaded machine starts slowly
    drop(home, "record once", "m1")
    asked = wait_for(lambda: [f for f in read_outbox(home) if f["kind"] == "approval"], 20)
    drop(home, f"/approve {asked[0]['approval']}", "c1")
    wait_for(lambda: statuses(home).get("m1") == "done", 30, "the approved turn's reply")
    daemon.stop()
    (approved,) = command_replies(home)
    assert approved["ok"] is True and approved.text.startswith("Approved")
    assert tool_runs(home) == ["record once"]
    assert [f.text for f in finals(home)] == ["Recorded."]


def test_send_wait_follows_a_collected_message_to_the_shared_reply(
    fake, home, env, threads, capsys, environ
):
    write_config(home, channels={"busy": "collect"})
    gate = threading.Event()
    fake.add(hold(gate, text("first")))
    fake.add(text("both answered"))
    daemon = threads(home, env, ready=False).wait_ready(60)
    drop(home, "one", "m1")
    drop(home, "two", "m2", timestamp="2030-01-01T00:00:01Z")
    fake.wait_for_requests(1)

    def release() -> None:
        wait_for(lambda: len(statuses(home)) == 3, 20, "the third message to be claimed")
        gate.set()

    releaser = threading.Thread(target=release)
    releaser.start()
    sent = in_process(capsys, "send", "--wait", "three", "--home", str(home))
    releaser.join()
    daemon.stop()
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == "both answered"


def test_collect_keeps_each_messages_attachments_in_arrival_order(fake, home, env):
    write_config(home, channels={"busy": "collect"})
    fake.default = text("a red square, twice")
    drop(home, "first look", "m1", timestamp="2030-01-01T00:00:01Z")
    drop_folder(
        home,
        "m2",
        {
            "message.md": b'+++\nid = "m2"\ntimestamp = 2030-01-01T00:00:02Z\n+++\nand this one',
            "red.png": image_bytes(),
        },
    )
    run_once(home, env)
    (request,) = fake.requests
    (user,) = [m for m in request.messages if m["role"] == "user"]
    kinds = [block["type"] for block in user["content"]]
    assert kinds.count("image") == 1
    said = request.last_user_text
    assert said.index("first look") < said.index("and this one")
    assert kinds.index("image") > next(
        i for i, b in enumerate(user["content"]) if "first look" in b.get("text", "")
    )
