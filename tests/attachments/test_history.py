"""Later turns replay a message's attachments, cache-friendly; team tasks pass them on."""

from __future__ import annotations

import base64
import itertools
import json

from smarthole.testing import text
from tests.helpers import (
    db,
    drop,
    drop_folder,
    finals,
    image_bytes,
    run_once,
    wait_for,
    write_config,
)
from tests.pipeline.test_prompt_cache import canonical, extends
from tests.teams.test_tasks import TEAM

PHOTO = image_bytes((200, 100), "PNG", "blue")


def first_user_blocks(request) -> list[str]:
    return [block["type"] for block in request.messages[0]["content"]]


def test_a_20_turn_conversation_with_an_image_keeps_its_cached_prefix(home, fake, env, live_daemon):
    fake.default = text("noted")
    drop_folder(home, "m01", {"message.md": b"Here is the photo", "photo.png": PHOTO})
    wait_for(lambda: len(finals(home)) == 1)
    for n in range(2, 21):
        drop(home, f"Question {n}", f"m{n:02d}")
        wait_for(lambda n=n: len(finals(home)) == n, message=f"reply {n}")
    requests = fake.requests
    assert len(requests) == 20
    image = requests[0].messages[0]["content"][1]
    assert image["type"] == "image"
    for earlier, later in itertools.pairwise(requests):
        assert extends(later, earlier)  # byte for byte the same prefix, image and all
        assert canonical(later.messages[0]["content"][1]) == canonical(image)
    usage = (
        db(home)
        .execute("SELECT cache_read_input_tokens FROM usage ORDER BY id DESC LIMIT 1")
        .fetchone()
    )
    assert usage["cache_read_input_tokens"] > len(image["source"]["data"]) // 4


def test_history_turns_replaces_older_attachments_with_a_note(home, fake, env):
    write_config(home, attachments={"history_turns": 2})
    fake.default = text("ok")
    drop_folder(home, "m1", {"message.md": b"Photo", "photo.png": PHOTO})
    run_once(home, env)
    drop(home, "Second", "m2")
    run_once(home, env)
    drop(home, "Third", "m3")
    run_once(home, env)
    first, second, third = fake.requests
    assert first_user_blocks(first) == ["text", "image", "text"]
    assert first_user_blocks(second) == ["text", "image", "text"]
    assert first_user_blocks(third) == ["text", "text", "text"]
    note = third.messages[0]["content"][1]["text"]
    assert note.startswith("[attachment photo.png (image/png, ")
    assert "not sent again" in note


def test_history_turns_holds_in_a_running_daemon(home, fake, env, threads):
    """The daemon keeps a conversation's history between turns: the photo of turn 1 is sent
    whole in turn 1 only, and as the one-line note in the request bodies of turns 2 to 4."""
    write_config(home, attachments={"history_turns": 1})
    threads(home, env)
    fake.default = text("ok")
    drop_folder(home, "m1", {"message.md": b"Photo", "photo.png": PHOTO})
    wait_for(lambda: len(finals(home)) == 1)
    for n in (2, 3, 4):
        drop(home, f"Turn {n}", f"m{n}")
        wait_for(lambda n=n: len(finals(home)) == n, message=f"reply {n}")
    photo = base64.b64encode(PHOTO).decode()
    first, *later = fake.requests
    assert first_user_blocks(first) == ["text", "image", "text"]
    assert photo in json.dumps(first.body)
    for request in later:
        assert first_user_blocks(request) == ["text", "text", "text"]
        assert request.messages[0]["content"][1]["text"].startswith("[attachment photo.png (")
        assert photo not in json.dumps(request.body)


def test_a_team_task_gives_the_attachments_to_its_first_agent(home, fake, env):
    write_config(home, agents=TEAM)
    fake.add(text("r1"), agent="researcher")
    fake.add(text("c1"), agent="critic")
    message = b'+++\nagents = ["researcher", "critic"]\nmax_turns = 2\n+++\nWhat is this?'
    drop_folder(home, "task", {"message.md": message, "photo.png": PHOTO})
    run_once(home, env)
    researcher = next(r for r in fake.requests if r.agent == "researcher")
    critic = next(r for r in fake.requests if r.agent == "critic")
    assert [b["type"] for b in researcher.messages[0]["content"]] == ["image", "text"]
    assert [b["type"] for b in critic.messages[0]["content"]] == ["text"]
    assert finals(home)


def test_attachment_input_tokens_are_counted_like_any_other(home, fake, env, capsys):
    fake.default = text("ok")
    drop(home, "Plain", "m1", channel="plain")
    big = image_bytes((800, 600), "PNG", "white")
    drop_folder(home, "m2", {"message.md": b'+++\nchannel = "photo"\n+++\nPlain', "p.png": big})
    run_once(home, env)
    rows = db(home).execute(
        "SELECT c.channel, u.input_tokens + u.cache_creation_input_tokens + "
        "u.cache_read_input_tokens AS prompt FROM usage u JOIN conversations c "
        "ON c.id = u.conversation_id"
    )
    prompt = {row["channel"]: row["prompt"] for row in rows}
    assert prompt["photo"] - prompt["plain"] >= len(big) // 4  # base64: 4/3 bytes, 4 a token


def test_each_attachment_counts_against_the_history_budget(home, fake, env):
    """Three photo turns do not fit a budget of two photos: the oldest is left out."""
    write_config(home, conversation={"history_budget_tokens": 3500})
    fake.default = text("ok")
    for n in (1, 2, 3):
        drop_folder(home, f"m{n}", {"message.md": f"Photo {n}".encode(), "p.png": PHOTO})
        run_once(home, env)
    last = fake.requests[-1]
    said = [
        b["text"]
        for m in last.messages
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "text" and not b["text"].startswith("<context>")
    ]
    assert said == ["Photo 2", "Photo 3"]
