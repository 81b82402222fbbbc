"""Approvals: a chosen tool runs only after a person's yes, once, whatever happens meanwhile.

Every test counts the real runs of the test plugin's non-idempotent ``record`` tool (each run
is a line of ``tool-runs.log``): approved, it runs once; otherwise, never.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smarthole.formats import args_hash, parse_time, utc_now
from smarthole.testing import text, tool_use
from tests.helpers import (
    TEST_PLUGINS,
    db,
    drop,
    finals,
    read_outbox,
    run_once,
    tool_runs,
    wait_for,
    write_config,
)


def approval_items(home: Path) -> list:
    return [f for f in read_outbox(home) if f["kind"] == "approval"]


def error_items(home: Path) -> list:
    return [f for f in read_outbox(home) if f["kind"] == "error"]


def waiting_approval(home: Path, count: int = 1):
    items = wait_for(lambda: len(approval_items(home)) >= count and approval_items(home), 10)
    return items[count - 1]


def events_of(home: Path, type: str) -> list:
    rows = db(home).execute("SELECT data FROM events WHERE type = ? ORDER BY id", (type,))
    return [json.loads(row["data"]) for row in rows]


@pytest.fixture
def approvals_home(home):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["record"]},
    )
    return home


def ask_to_record(fake, home, value="once", message_id="m1", **fields):
    fake.add(tool_use("record", {"value": value}))
    drop(home, f"record {value}", message_id, **fields)


def test_an_approved_call_runs_once_and_the_turn_goes_on(approvals_home, fake, env, live_daemon):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    assert item["tool"] == "record"
    assert item["args_hash"] == args_hash("record", {"value": "once"})
    assert item["conversation"] and item["channel"] == "default" and item["expires"]
    assert len(item["approval"]) >= 8
    assert "record" in item.text and '"value": "once"' in item.text
    assert tool_runs(home) == []
    assert finals(home) == []
    fake.add(text("Recorded."))
    drop(home, "", "a1", approve=item["approval"])
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == ["record once"]
    assert [f.text for f in finals(home)] == ["Recorded."]
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == "recorded once" and not result.get("is_error")
    (decided,) = events_of(home, "approval_decided")
    assert decided["decision"] == "approved" and decided["by"] == "inbox"
    assert len(events_of(home, "approval_requested")) == 1
    # The final file is written before the claim is released; the answer's is gone too.
    wait_for(lambda: not list((home / ".smarthole" / "claimed").iterdir()), 10, "no claims")


def test_a_denied_call_never_runs_and_the_model_reads_why(approvals_home, fake, env, live_daemon):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Fine, I will not."))
    drop(home, "not today", "a1", deny=item["approval"])
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == []
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"]
    assert result["content"] == "Error: denied by the person: not today"
    (decided,) = events_of(home, "approval_decided")
    assert decided["decision"] == "denied"


def test_the_text_of_an_approval_reaches_the_model_as_the_persons_note(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Recorded, and noted."))
    drop(home, "Go ahead, but only once.", "a1", approve=item["approval"])
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == ["record once"]
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == (
        "recorded once\n\n(The person approved this call with a note: Go ahead, but only once.)"
    )


# -- the command line: approvals, approve, deny, status, show --------------------------------


def cli(home: Path, capsys, *args: str) -> tuple[int, str]:
    from smarthole.cli import main

    capsys.readouterr()
    code = main([args[0], "--home", str(home), *args[1:]])
    return code, capsys.readouterr().out


def test_the_cli_lists_what_waits_and_approves_it_through_the_inbox(
    approvals_home, fake, env, live_daemon, capsys
):

    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    code, out = cli(home, capsys, "approvals", "--json")
    (listed,) = json.loads(out)
    assert code == 0 and listed["id"] == item["approval"] and listed["status"] == "waiting"
    assert listed["input"] == {"value": "once"} and listed["args_hash"] == item["args_hash"]
    _, out = cli(home, capsys, "approvals")
    header, row = out.splitlines()
    assert header.split() == ["ID", "TOOL", "CONVERSATION", "CHANNEL", "EXPIRES", "INPUT"]
    assert row.split()[:2] == [item["approval"], "record"] and row.endswith("value=once")
    assert row.index("record") == header.index("TOOL")  # aligned, plain text
    _, out = cli(home, capsys, "status", "--json")
    assert json.loads(out)["approvals_waiting"] == 1
    # status and ls say what the message waits for, not a retry
    _, out = cli(home, capsys, "status")
    assert "waiting for your approval: 1" in out and "deferred (retried automatically): 0" in out
    assert "waiting for your approval of record (until " in out and "attempts=" not in out
    _, out = cli(home, capsys, "ls")
    assert "waiting for your approval of record (until " in out and "deferred" not in out
    _, out = cli(home, capsys, "show", item["conversation"])
    assert f"WAITING FOR YOUR APPROVAL {item['approval']}: record" in out
    fake.add(text("Recorded."))
    code, out = cli(home, capsys, "approve", item["approval"][:6])
    assert code == 0 and "sent" in out
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == ["record once"]
    (decided,) = events_of(home, "approval_decided")
    assert decided["by"] == "cli" and decided["decision"] == "approved"
    _, out = cli(home, capsys, "status", "--json")
    assert json.loads(out)["approvals_waiting"] == 0
    _, out = cli(home, capsys, "show", item["conversation"])
    assert f"approval {item['approval']}: record" in out and "approved by cli" in out
    code = cli(home, capsys, "approve", item["approval"])[0]
    assert code != 0  # already decided: said at once, nothing written


def test_the_cli_denies_with_a_reason(approvals_home, fake, env, live_daemon, capsys):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Understood."))
    code, _ = cli(home, capsys, "deny", item["approval"], "--reason", "wrong list")
    assert code == 0
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == []
    (result,) = fake.requests[-1].tool_results
    assert result["content"] == "Error: denied by the person: wrong list"
    (decided,) = events_of(home, "approval_decided")
    assert decided["by"] == "cli" and decided["decision"] == "denied"


# -- timeouts, wrong answers, plain messages, always ------------------------------------------


@pytest.fixture
def impatient_home(home):
    write_config(
        home,
        plugins={"paths": [str(TEST_PLUGINS)], "enabled": ["testtools"]},
        approvals={"tools": ["rec*"], "timeout": "1s"},
    )
    return home


def test_no_answer_by_the_expiry_denies_the_call(impatient_home, fake, env, live_daemon):
    home = impatient_home
    ask_to_record(fake, home)
    waiting_approval(home)
    fake.add(text("Nobody answered."))
    wait_for(lambda: finals(home), 10, "the final reply after the expiry")
    assert tool_runs(home) == []
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] and result["content"] == "Error: no answer within 1s"
    (decided,) = events_of(home, "approval_decided")
    assert decided["decision"] == "expired" and decided["by"] == "timeout"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ({"approve": "0123456789ab"}, "no approval has the id '0123456789ab'"),
        ({"args_hash": "0" * 64}, "args_hash does not match the call"),
    ],
)
def test_a_wrong_answer_gets_an_error_reply_and_runs_nothing(
    approvals_home, fake, env, live_daemon, answer, error
):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    drop(home, "", "a1", **{"approve": item["approval"], **answer})
    (reply,) = wait_for(lambda: error_items(home), 10, "the error reply")
    assert error in reply.text and reply["in_reply_to"] == "a1"
    assert tool_runs(home) == [] and events_of(home, "approval_decided") == []
    fake.add(text("Recorded."))
    drop(home, "", "a2", approve=item["approval"], args_hash=item["args_hash"])
    wait_for(lambda: tool_runs(home), 10, "the run after the right answer")
    wait_for(lambda: [f for f in finals(home) if f["kind"] == "response"], 10)
    assert tool_runs(home) == ["record once"]


def test_the_first_of_two_answers_decides(approvals_home, fake, env, live_daemon):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Recorded."))
    drop(home, "", "a1", approve=item["approval"])
    wait_for(lambda: events_of(home, "approval_decided"), 10)
    drop(home, "no!", "a2", deny=item["approval"])
    (reply,) = wait_for(lambda: error_items(home), 10, "the error reply")
    assert f"approval {item['approval']} was already decided: approved" in reply.text
    wait_for(lambda: [f for f in finals(home) if f["kind"] == "response"], 10)
    assert tool_runs(home) == ["record once"]
    assert len(events_of(home, "approval_decided")) == 1


def test_a_plain_message_instead_of_an_answer_reaches_the_model(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Then I will use the other list."))
    drop(home, "No, use the other list.", "m2")
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == []
    (result,) = fake.requests[-1].tool_results
    assert result["is_error"]
    assert result["content"] == (
        "Error: the person answered instead of approving this call: No, use the other list."
    )
    (decided,) = events_of(home, "approval_decided")
    assert decided["decision"] == "answered" and decided["approval"] == item["approval"]
    assert [f["in_reply_to"] for f in finals(home)] == ["m1"]  # m2 was the answer, not a turn
    assert len(fake.requests) == 2


def test_always_approves_the_tool_for_the_rest_of_the_conversation(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(tool_use("record", {"value": "twice"}))
    fake.add(text("Recorded both."))
    drop(home, "", "a1", approve=item["approval"], always=True)
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == ["record once", "record twice"]
    assert len(approval_items(home)) == 1
    (decided,) = events_of(home, "approval_decided")
    assert decided["always"] is True


def test_two_channels_wait_at_once_and_each_answer_frees_its_own(
    approvals_home, fake, env, live_daemon
):
    home = approvals_home
    fake.add(tool_use("record", {"value": "a"}))
    drop(home, "record a", "m1", channel="one")
    first = waiting_approval(home)
    fake.add(tool_use("record", {"value": "b"}))
    drop(home, "record b", "m2", channel="two")
    second = waiting_approval(home, 2)
    assert {first["channel"], second["channel"]} == {"one", "two"}
    fake.add(text("Done b."))
    drop(home, "", "a2", approve=second["approval"])
    wait_for(lambda: finals(home), 10, "channel two's reply")
    assert tool_runs(home) == ["record b"]
    fake.add(text("Done a."))
    drop(home, "", "a1", approve=first["approval"])
    wait_for(lambda: len(finals(home)) == 2, 10, "channel one's reply")
    assert tool_runs(home) == ["record b", "record a"]


def test_a_json_answer_file_takes_the_same_keys(approvals_home, fake, env, live_daemon):
    home = approvals_home
    ask_to_record(fake, home)
    item = waiting_approval(home)
    fake.add(text("Recorded."))
    answer = {"approve": item["approval"], "args_hash": item["args_hash"]}
    staged = home / "answer.json.part"
    staged.write_text(json.dumps(answer))
    staged.rename(home / "inbox" / "answer.json")
    wait_for(lambda: finals(home), 10, "the final reply")
    assert tool_runs(home) == ["record once"]


def test_a_timeout_that_passed_while_no_daemon_ran_is_applied_at_start(impatient_home, fake, env):
    home = impatient_home
    ask_to_record(fake, home)
    run_once(home, env)  # asks, then stops: the message waits, with its due time stored
    item = waiting_approval(home)
    assert finals(home) == []
    (row,) = db(home).execute("SELECT expires_at FROM approvals")
    wait_for(lambda: parse_time(row["expires_at"]) < utc_now(), 5, "the expiry to pass")
    fake.add(text("Nobody answered in time."))
    run_once(home, env)
    assert [f.text for f in finals(home)] == ["Nobody answered in time."]
    assert tool_runs(home) == [] and item["approval"]
    assert fake.requests[-1].tool_results[0]["content"] == "Error: no answer within 1s"


# -- answer files, as the parser reads them ---------------------------------------------------


@pytest.mark.parametrize(
    ("front_matter", "error"),
    [
        ('approve = "0123456789ab"\ndeny = "0123456789ab"', "cannot both be given"),
        ('approve = "nope"', "approve must be an approval id"),
        ('deny = "0123456789ab"\nalways = true', "always is only meaningful with approve"),
        ('approve = "0123456789ab"\nargs_hash = "abc"', "args_hash must be 64"),
        ('approve = "0123456789ab"\nalways = "yes"', "always must be true or false"),
        ('args_hash = "' + "0" * 64 + '"', "only meaningful with approve or deny"),
        ('approve = "0123456789ab"\nagents = ["a"]', "cannot also ask for agents"),
    ],
)
def test_a_malformed_answer_file_is_set_aside_with_the_reason(front_matter, error):
    from datetime import UTC, datetime

    from smarthole.errors import MessageError
    from smarthole.pipeline.message import parse_message

    data = f"+++\n{front_matter}\n+++\nsome text\n".encode()
    with pytest.raises(MessageError, match=error):
        parse_message("a.md", data, modified=datetime.now(UTC))


def test_an_answer_file_needs_no_text_and_carries_its_note():
    from datetime import UTC, datetime

    from smarthole.pipeline.message import parse_message

    data = b'+++\napprove = "0123456789ab"\nalways = true\n+++\n'
    answer = parse_message("a.md", data, modified=datetime.now(UTC)).answer
    assert answer is not None and (answer.decision, answer.always) == ("approve", True)
    message = parse_message(
        "d.json", b'{"deny": "0123456789ab", "text": "no"}', modified=datetime.now(UTC)
    )
    assert message.answer is not None and message.answer.decision == "deny"
    assert message.text == "no"


def test_send_wait_that_times_out_says_it_waits_for_an_approval(
    approvals_home, fake, env, live_daemon, capsys
):
    from smarthole.cli import main

    fake.add(tool_use("record", {"value": "tea"}))
    code = main(["send", "--wait", "--timeout", "3", "--home", str(approvals_home), "record tea"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "```" not in out and "**" not in out  # the item's Markdown, as plain text
    assert "waits for your approval (`smarthole approvals`" in err
    assert "is the daemon running" not in err
