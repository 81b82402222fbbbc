"""The agent schedules: schedule_message and cancel_schedule, from a real turn to the reply."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from smarthole.testing import text, tool_use
from tests.helpers import db, drop, finals, wait_for


def schedules(home) -> list[dict]:
    return [dict(r) for r in db(home).execute("SELECT * FROM schedules ORDER BY created_at")]


def test_a_reminder_the_agent_schedules_arrives_in_the_same_conversation(home, fake, live_daemon):
    at = (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S")
    fake.add(
        tool_use(
            "schedule_message",
            {"text": "Remind the user to call the bank.", "at": at, "timezone": "UTC"},
        )
    )
    fake.add(text("I will remind you."))
    fake.add(text("Reminder: call the bank."))
    drop(home, "Remind me in two seconds to call the bank", "m1")
    first, second = wait_for(lambda: len(finals(home)) == 2 and finals(home), 30, "both replies")
    assert [first.text, second.text] == ["I will remind you.", "Reminder: call the bank."]
    assert first["conversation"] == second["conversation"]
    assert second["in_reply_to"].startswith("schedule-")
    result = fake.requests[1].tool_results[0]
    assert "Scheduled" in result["content"] and not result.get("is_error")
    assert fake.requests[2].last_user_text == "Remind the user to call the bank."
    (made,) = schedules(home)
    assert made["source"] == "tool" and made["conversation_id"] == first["conversation"]
    assert made["state"] == "done"


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"text": "x", "cron": "0 25 * * *"}, "Bad hour"),
        ({"text": "x", "every": "soon"}, "a number and a unit"),
        ({"text": "x", "at": "2020-01-01T09:00"}, "has passed"),
        ({"text": "x", "every": "1h", "cron": "* * * * *"}, "exactly one of"),
        ({"text": "x"}, "exactly one of"),
        ({"text": " ", "every": "1h"}, "text is required"),
        ({"text": "x", "every": "1h", "timezone": "Atlantis"}, "unknown time zone"),
    ],
)
def test_a_bad_schedule_is_a_tool_error_the_model_can_correct(
    home, fake, live_daemon, arguments, says
):
    fake.add(tool_use("schedule_message", arguments))
    fake.add(text("Sorry."))
    drop(home, "schedule something", "m1")
    wait_for(lambda: finals(home), 20, "the reply")
    result = fake.requests[1].tool_results[0]
    assert result["is_error"] is True and says in str(result["content"])
    assert schedules(home) == []


def test_cancel_schedule_removes_one_of_this_conversation_only(home, fake, live_daemon):
    fake.add(tool_use("schedule_message", {"text": "Stretch.", "every": "1h"}))
    fake.add(text("Scheduled."))
    drop(home, "remind me hourly", "m1")
    wait_for(lambda: finals(home), 20)
    (made,) = schedules(home)
    fake.add(tool_use("cancel_schedule", {"id": "nope"}))
    fake.add(tool_use("cancel_schedule", {"id": made["id"][:6]}))
    fake.add(text("Cancelled."))
    drop(home, "stop it", "m2")
    wait_for(lambda: len(finals(home)) == 2, 20)
    refused, done = fake.requests[3].tool_results[0], fake.requests[4].tool_results[0]
    assert refused["is_error"] is True and made["id"] in str(refused["content"])
    assert "Cancelled schedule" in str(done["content"])
    assert schedules(home) == []
