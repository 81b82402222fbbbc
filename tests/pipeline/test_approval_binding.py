"""An approval decides one call, until its expiry, and records who really answered (issue 41,
items 2, 3 and 4).

Every test counts the real runs of the test plugin's non-idempotent ``record`` tool.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smarthole.testing import text, tool_use
from tests.helpers import TEST_PLUGINS, db, drop, finals, read_outbox, tool_runs, wait_for
from tests.helpers import write_config as configure


def approval_items(home: Path) -> list:
    return [f for f in read_outbox(home) if f["kind"] == "approval"]


def responses(home: Path) -> list:
    return [f for f in finals(home) if f["kind"] == "response"]


def decided_events(home: Path) -> list[dict]:
    rows = db(home).execute("SELECT data FROM events WHERE type = 'approval_decided' ORDER BY id")
    return [json.loads(row["data"]) for row in rows]


@pytest.fixture
def approvals_home(home):
    configure(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"]},
    )
    return home


def test_a_tool_use_id_repeated_in_a_later_turn_is_a_new_call(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "one"}, id="toolu_same"))
    drop(home, "record one", "m1")
    (first,) = wait_for(lambda: approval_items(home), 10)
    fake.add(text("Recorded one."))
    drop(home, "", "a1", approve=first["approval"])
    wait_for(lambda: responses(home), 10)
    assert tool_runs(home) == ["record one"]

    fake.add(tool_use("record", {"value": "two"}, id="toolu_same"))  # a proxy repeats the id
    drop(home, "record two", "m2", conversation=first["conversation"])
    items = wait_for(lambda: len(approval_items(home)) == 2 and approval_items(home), 10)
    second = next(i for i in items if i["approval"] != first["approval"])
    assert '"value": "two"' in second.text
    assert tool_runs(home) == ["record one"]  # not run on the first call's yes
    fake.add(text("Recorded two."))
    drop(home, "", "a2", approve=second["approval"])
    wait_for(lambda: len(responses(home)) == 2, 10, "the second turn's reply")
    assert tool_runs(home) == ["record one", "record two"]
    assert sorted(f.text for f in responses(home)) == ["Recorded one.", "Recorded two."]


def test_an_answer_after_the_expiry_is_refused_and_nothing_runs(home, fake, env, threads):
    configure(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"], "timeout": "1s"},
    )
    fake.add(tool_use("record", {"value": "late"}))
    running = threads(home, env)
    drop(home, "record late", "m1")
    (item,) = wait_for(lambda: approval_items(home), 10)
    running.stop()  # the daemon is down across the expiry...
    wait_for(
        lambda: (
            db(home)
            .execute("SELECT 1 FROM approvals WHERE expires_at < strftime('%Y-%m-%dT%H:%M:%fZ')")
            .fetchone()
        ),
        10,
        "the expiry to pass",
    )
    drop(home, "", "a1", approve=item["approval"])  # ...and the answer comes late
    fake.add(text("Nobody answered in time."))
    threads(home, env)
    refused = wait_for(
        lambda: [f for f in read_outbox(home) if f["in_reply_to"] == "a1" and f["kind"] == "error"],
        10,
    )
    assert "already decided: expired" in refused[0].text
    wait_for(lambda: responses(home), 10, "the turn's end")
    assert tool_runs(home) == []
    assert [(e["decision"], e["by"]) for e in decided_events(home)] == [("expired", "timeout")]


def test_who_decided_comes_from_the_path_not_the_files_claim(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "x"}))
    drop(home, "record x", "m1")
    (item,) = wait_for(lambda: approval_items(home), 10)
    fake.add(text("Recorded."))
    drop(
        home, "", "a1", approve=item["approval"], metadata={"by": "web"}
    )  # a file claiming to be the web
    wait_for(lambda: responses(home), 10)
    assert [e["by"] for e in decided_events(home)] == ["inbox"]
    (row,) = db(home).execute("SELECT decided_by FROM approvals")
    assert row["decided_by"] == "inbox"
