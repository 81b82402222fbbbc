"""``smarthole search`` and ``resume --search``: hits as people read them, and as JSON."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest

from smarthole.cli import main
from smarthole.cli.searching import since_time
from smarthole.errors import UsageError
from smarthole.testing import text
from tests.helpers import db, drop, finals, run_once


def cli(home, *args):
    return main([args[0], "--home", str(home), *args[1:]])


BANK = "Bank \x1b]0;pwned\x07"


@pytest.fixture
def talked(home, fake, env):
    """Two conversations: milk on the kitchen channel, a (hostile) title about the bank."""
    fake.default = lambda request: text(f"Noted: {request.last_user_text}")
    drop(home, "buy oat milk and bread", "m1", channel="kitchen")
    drop(home, "call the bank about the mortgage \x1b[31mnow", "m2", channel="office")
    run_once(home, env)
    connection = db(home)
    connection.execute("UPDATE conversations SET title = ? WHERE channel = 'office'", (BANK,))
    connection.commit()
    return home


def test_hits_show_title_time_who_and_a_marked_snippet(talked, capsys):
    assert cli(talked, "search", "milk") == 0
    out = capsys.readouterr().out
    first, second, third, fourth = out.splitlines()
    assert first.startswith("1. ") and " · person · [kitchen] " in first
    assert second == "   buy oat **milk** and bread"
    assert " · agent · [kitchen] " in third
    assert fourth == "   Noted: buy oat **milk** and bread"


def test_control_characters_in_titles_and_text_are_shown_not_sent(talked, capsys):
    assert cli(talked, "search", "mortgage", "--role", "human") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "Bank ^[]0;pwned^G · " in out
    assert "call the bank about the **mortgage** ^[[31mnow" in out


def test_json_hits_are_exact(talked, capsys):
    assert cli(talked, "search", "mortgage", "--json", "--role", "human") == 0
    (hit,) = json.loads(capsys.readouterr().out)
    assert hit["title"] == BANK
    assert hit["snippet"] == "call the bank about the mortgage \x1b[31mnow"
    assert hit["matches"] == ["mortgage"]
    assert (hit["role"], hit["who"], hit["channel"]) == ("human", "person", "office")
    assert set(hit) == {
        "conversation_id",
        "title",
        "channel",
        "at",
        "role",
        "who",
        "snippet",
        "matches",
        "rank",
    }


def test_filters_and_limit(talked, capsys):
    assert cli(talked, "search", "milk OR bank", "--channel", "office", "--json") == 0
    assert {h["channel"] for h in json.loads(capsys.readouterr().out)} == {"office"}
    kitchen = db(talked).execute("SELECT id FROM conversations WHERE channel = 'kitchen'")
    prefix = kitchen.fetchone()[0][:6]
    assert cli(talked, "search", "milk OR bank", "--conversation", prefix, "--json") == 0
    assert {h["channel"] for h in json.loads(capsys.readouterr().out)} == {"kitchen"}
    assert cli(talked, "search", "milk", "--limit", "1", "--json", "--since", "1d") == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert cli(talked, "search", "milk", "--since", "2999-01-01") == 0
    assert capsys.readouterr().out == "Nothing found.\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", ""], "the search query is empty"),
        (["search", "milk", "--since", "last week"], "--since takes a date"),
        (["search", "milk", "--conversation", "zzzz"], "no conversation matches 'zzzz'"),
    ],
)
def test_mistakes_are_one_line_errors(talked, capsys, args, message):
    assert cli(talked, *args) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("query", ['"', "NEAR(", "*", "milk AND", "(((", "a" * 10_000])
def test_queries_fts5_cannot_parse_are_searched_as_phrases(talked, capsys, query):
    assert cli(talked, "search", query) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_since_reads_dates_times_and_ages():
    now = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    assert since_time("7d", now) == now - timedelta(days=7)
    assert since_time("90m", now) == now - timedelta(minutes=90)
    assert since_time("2026-11-20T08:00Z", now) == datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
    assert since_time("2026-11-20", now) == datetime(2026, 11, 20).astimezone()
    with pytest.raises(UsageError):
        since_time("soon", now)


def test_resume_search_picks_a_matching_conversation(talked, fake, env, capsys, monkeypatch):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fake.default = text("Back to the bank.")
    monkeypatch.setattr("sys.stdin", io.StringIO("1\nany news?\n"))
    assert cli(talked, "resume", "--search", "mortgage") == 0
    out = capsys.readouterr().out
    assert out.startswith("Conversations that match, best first:\n\n1. Bank ^[]0;pwned^G")
    assert "2. " not in out  # one line a conversation, however many hits it has
    assert "smarthole: Back to the bank." in out
    office = [f for f in finals(talked) if f.text == "Back to the bank."]
    assert office and office[0]["channel"] == "office"


@pytest.mark.parametrize(("query", "said"), [("pelican", "No conversation matches."), ("milk", "")])
def test_resume_search_finding_nothing_or_cancelled(talked, capsys, monkeypatch, query, said):
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert cli(talked, "resume", "--search", query) == 0
    assert said in capsys.readouterr().out


def test_resume_takes_an_id_or_a_search_not_both(talked, capsys):
    with pytest.raises(SystemExit):
        cli(talked, "resume", "abc", "--search", "milk")
    assert "not allowed with" in capsys.readouterr().err
