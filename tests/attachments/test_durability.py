"""A kill -9 at any step leaves no message naming a missing blob, and nothing lost; blobs no
message names are removed by housekeeping, never one a pending message needs."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time

import pytest

from smarthole.app import App
from smarthole.attachments import BlobStore
from smarthole.cli import main
from smarthole.db.blobrefs import referenced_blobs
from smarthole.home import Home
from smarthole.testing import hold, server_error, text
from tests.daemon.test_reliability import assert_one_final_each
from tests.helpers import (
    TEST_PLUGINS,
    blobs,
    db,
    drop_folder,
    finals,
    image_bytes,
    run_once,
    wait_for,
    write_config,
)

PHOTO = image_bytes((120, 80), "PNG", "purple")
HOUR_AGO = time.time() - 7200


def assert_nothing_dangling(home) -> None:
    """Every blob any message names is stored."""
    store = App.load(Home(home)).store
    stored = {p.parent.name + p.name for p in blobs(home)}
    assert referenced_blobs(store) <= stored


def message_id(home) -> str:
    return db(home).execute("SELECT message_id FROM inbox").fetchone()["message_id"]


def test_kill_9_between_blob_write_and_message_commit(home, fake, env, daemons):
    write_config(home, plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["crash_at_admit"]})
    (home / "crash-at-admit").touch()
    fake.default = text("A purple rectangle.")
    first = daemons(home, env)
    drop_folder(home, "photo", {"message.md": b"What is it?", "photo.png": PHOTO})
    first.process.wait(timeout=20)
    assert first.process.returncode == -9
    assert (home / "blobs-at-crash").exists()  # it died in the ledger's write
    assert len(blobs(home)) == 1  # the blob was on disk before the row
    assert db(home).execute("SELECT count(*) FROM inbox").fetchone()[0] == 0
    assert fake.requests == []
    (home / "crash-at-admit").unlink()
    daemons(home, env)  # recovery takes the claimed folder in again
    wait_for(lambda: finals(home), 20, "the reply after the restart")
    assert_one_final_each(home, message_id(home))
    assert len(fake.requests) == 1
    assert fake.requests[0].messages[0]["content"][1]["type"] == "image"
    assert len(blobs(home)) == 1
    assert_nothing_dangling(home)


def test_kill_9_during_the_turn_answers_once_with_the_image(home, fake, env, daemons):
    stuck = threading.Event()
    fake.add(hold(stuck, text("never seen")))
    first = daemons(home, env)
    drop_folder(home, "photo", {"message.md": b"What is it?", "photo.png": PHOTO})
    wait_for(lambda: fake.requests, 20, "the model call")
    first.kill()
    fake.add(text("A purple rectangle."))
    daemons(home, env)
    assert_one_final_each(home, message_id(home))
    stuck.set()
    again = fake.requests[-1]
    assert again.messages[0]["content"][1] == fake.requests[0].messages[0]["content"][1]
    assert finals(home)[0].text == "A purple rectangle."
    assert_nothing_dangling(home)


def test_housekeeping_removes_only_blobs_no_message_names(home, fake, env):
    fake.default = text("ok")
    drop_folder(home, "kept", {"message.md": b"Keep this", "photo.png": PHOTO})
    run_once(home, env)
    store_blobs = BlobStore(Home(home).blobs)
    orphan_old = store_blobs.put(b"old and named by nothing")
    orphan_young = store_blobs.put(b"young and named by nothing")
    for sha in (orphan_old, *[p.parent.name + p.name for p in blobs(home)]):
        if sha != orphan_young:
            os.utime(store_blobs.path(sha), (HOUR_AGO, HOUR_AGO))
    store = App.load(Home(home)).store
    removed = store_blobs.remove_unreferenced(referenced_blobs(store))
    assert removed == 1
    assert not store_blobs.exists(orphan_old)
    assert store_blobs.exists(orphan_young)  # it may be a message about to commit
    (kept,) = json.loads(db(home).execute("SELECT payload FROM inbox").fetchone()[0])["attachments"]
    assert store_blobs.exists(kept["sha256"])
    conversation = db(home).execute("SELECT id FROM conversations").fetchone()["id"]
    store.delete_conversation(conversation)  # pruned: a done message keeps nothing
    assert store_blobs.remove_unreferenced(referenced_blobs(store)) == 1
    assert not store_blobs.exists(kept["sha256"])


def test_a_pending_message_keeps_its_blobs(home, fake, env):
    drop_folder(home, "waiting", {"message.md": b"Later", "photo.png": PHOTO})
    app = App.load(Home(home))
    from smarthole.daemon import Runtime

    runtime = Runtime.build(app, env=env)
    try:
        runtime.inbox.claim_batch()
    finally:
        runtime.close()
    (blob,) = blobs(home)
    os.utime(blob, (HOUR_AGO, HOUR_AGO))
    assert db(home).execute("SELECT status FROM inbox").fetchone()["status"] == "queued"
    assert BlobStore(Home(home).blobs).remove_unreferenced(referenced_blobs(app.store)) == 0
    assert blob.exists()


@pytest.mark.parametrize("cleaned_up", [False, True], ids=["moved-back", "re-created"])
def test_a_dead_folder_message_is_retried_with_its_attachments(home, fake, env, cleaned_up):
    write_config(home, retry={"max_attempts": 1})
    fake.add(server_error(503))
    drop_folder(home, "photo", {"message.md": b'+++\nid = "p1"\n+++\nLook', "p.png": PHOTO})
    run_once(home, env)
    assert (home / "failed" / "photo").is_dir()
    if cleaned_up:
        shutil.rmtree(home / "failed" / "photo")
    assert main(["retry", "p1", "--home", str(home)]) == 0
    fake.add(text("Purple."))
    run_once(home, env)
    assert finals(home)[-1].text == "Purple."
    assert fake.requests[-1].messages[0]["content"][1]["type"] == "image"
