"""The search index after a kill -9 in the middle of storing: it says what the rows say."""

from __future__ import annotations

from smarthole.db.search import Search
from smarthole.db.store import Store
from smarthole.formats import utc_now
from smarthole.testing import delay, text
from tests.db.searchcheck import index_problems
from tests.helpers import db, drop, wait_for


def stored(home) -> int:
    return db(home).execute("SELECT count(*) FROM message_rows").fetchone()[0]


def test_the_index_stays_consistent_after_kill_9_mid_store(home, fake, env, daemons, threads):
    # Replies take a while, so the kill lands with turns in flight on three channels.
    fake.default = lambda request: delay(0.2, text(f"noted: {request.last_user_text}"))
    database = home / ".smarthole" / "smarthole.db"
    daemon = daemons(home, env)
    for n in range(30):
        drop(home, f"note{n} about a pelican", f"m{n}", channel=f"c{n % 3}")
    wait_for(lambda: stored(home) >= 15, 30, "15 stored rows")
    daemon.kill()  # SIGKILL, whatever it was writing
    assert 15 <= stored(home) < 60
    assert index_problems(database) == []
    threads(home, env)  # the last one (in a thread) finishes the work
    wait_for(lambda: stored(home) >= 60, 60, "every message and its reply")
    assert index_problems(database) == []
    store = Store.open(database, clock=utc_now)
    try:
        users = db(home).execute("SELECT count(*) FROM message_rows WHERE kind = 0").fetchone()[0]
        hits = Search(store).search("pelican", limit=500)
        assert len([h for h in hits if h.role == "human"]) == users == 30
    finally:
        store.close()
