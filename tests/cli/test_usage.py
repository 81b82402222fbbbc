"""``show ID --usage`` and the ``usage`` of ``status``: what the model cost, as the API said."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from smarthole.cli import main
from smarthole.db.usage import COUNTS
from smarthole.testing import text, tool_use
from tests.helpers import db, drop, finals, run_once


def counts(input: int, output: int, write: int = 0, read: int = 0) -> dict[str, int]:
    return dict(zip(COUNTS, (input, output, write, read), strict=True))


def cli(home, *args: str) -> int:
    return main([args[0], "--home", str(home), *args[1:]])


@pytest.fixture
def spent(home, fake, env):
    """Two turns: a tool loop of two calls, then one call that reads the cache."""
    fake.add(replace(tool_use("list_files", {}), usage=counts(1200, 80, 2048, 0)))
    fake.add(text("Nothing there.", usage=counts(1300, 40, 0, 2048)))
    fake.add(text("Still nothing.", usage=counts(150, 20, 0, 2048)))
    drop(home, "look", "m1")
    run_once(home, env)
    drop(home, "look again", "m2")
    run_once(home, env)
    return finals(home)[0]["conversation"]


def test_show_usage_prints_each_turn_and_the_total(home, spent, capsys):
    assert cli(home, "show", spent[:8], "--usage") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f'Usage of "Untitled conversation" ({spent})'
    table = out.splitlines()[2:6]
    assert table == [
        "turn   requests  input  output  cache write  cache read     cost",
        "1             2  2,500     120        2,048       2,048  $0.0059",
        "2             1    150      20            0       2,048  $0.0005",
        "total         3  2,650     140        2,048       4,096  $0.0063",
    ]
    assert out.splitlines()[-1] == "cache hit rate: 47% of input tokens read from the cache"


def test_show_usage_as_json(home, spent, capsys):
    assert cli(home, "show", spent, "--usage", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["conversation"] == spent
    assert [t["turn"] for t in report["turns"]] == [1, 2]
    assert report["turns"][0] == {
        "turn": 1,
        "requests": 2,
        **counts(2500, 120, 2048, 2048),
        "cache_hit_rate": round(2048 / (2500 + 2048 + 2048), 4),
        # claude-haiku-4-5 at $1, $5, $1.25 and $0.10 per million: 4,160 + 1,705 micro-dollars
        "cost": "0.005865",
        "cost_micros": 5865,
    }
    assert report["total"]["cost_micros"] == 5865 + 455
    assert report["total"]["requests"] == 3
    assert report["total"]["cache_read_input_tokens"] == 4096
    assert report["titles_and_summaries"] == []


def test_show_json_needs_usage(home, spent, capsys):
    assert cli(home, "show", spent, "--json") == 2
    assert "--json works with --usage" in capsys.readouterr().err


def test_a_conversation_without_usage_says_so(home, spent, capsys):
    with db(home) as connection:
        connection.execute("DELETE FROM usage")
    assert cli(home, "show", spent, "--usage") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "No model usage recorded."


def test_status_json_has_todays_totals_and_cache_hit_rate(home, spent, capsys):
    cli(home, "status", "--json")
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert usage == {
        "day": datetime.now(UTC).date().isoformat(),
        "requests": 3,
        **counts(2650, 140, 2048, 4096),
        "cache_hit_rate": round(4096 / (2650 + 2048 + 4096), 4),
        "cost": "0.00632",
        "cost_micros": 6320,
    }


def test_status_counts_only_today(home, spent, capsys):
    with db(home) as connection:
        connection.execute("UPDATE usage SET at = '2020-01-01T23:59:59.000000Z' WHERE turn = 2")
    cli(home, "status", "--json")
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert (usage["requests"], usage["input_tokens"]) == (2, 2500)


def test_status_shows_one_usage_line(home, spent, capsys):
    cli(home, "status")
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("usage today")]
    assert line == (
        "usage today (UTC): 3 requests · 2,650 input · 140 output · 2,048 cache write · "
        "4,096 cache read · cache hit rate 47% · $0.0063"
    )


def test_status_with_no_usage_yet(home, capsys):
    cli(home, "status", "--json")
    usage = json.loads(capsys.readouterr().out)["usage"]
    assert (usage["requests"], usage["cache_hit_rate"]) == (0, None)
    cli(home, "status")
    assert "usage today (UTC): no model requests" in capsys.readouterr().out
